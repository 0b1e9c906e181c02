#include "transport/control_channel.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "core/base/error.h"
#include "transport/zmq_wait.h"

namespace devmap {

ControlServer::ControlServer(zmq::context_t& ctx, const std::string& socket_path)
    : socket_(ctx, zmq::socket_type::router), endpoint_("ipc://" + socket_path) {
  socket_.set(zmq::sockopt::linger, 0);
  socket_.set(zmq::sockopt::router_mandatory, 1);
  try {
    socket_.bind(endpoint_);
  } catch (const zmq::error_t& e) {
    throw_runtime("cannot bind control socket " + endpoint_ + ": " + e.what());
  }
  if (::chmod(socket_path.c_str(), 0600) != 0)
    throw_runtime("cannot chmod " + socket_path + ": " + std::strerror(errno));
}

std::optional<PeerMessage> ControlServer::recv(std::chrono::milliseconds timeout) {
  if (!wait_readable(socket_, timeout)) return std::nullopt;
  zmq::message_t id, body;
  if (!socket_.recv(id, zmq::recv_flags::dontwait)) return std::nullopt;
  if (!id.more()) throw_runtime("malformed control frame: no body");
  (void)socket_.recv(body, zmq::recv_flags::none);
  while (body.more()) {  // drop extra frames: protocol messages are single frames
    zmq::message_t extra;
    (void)socket_.recv(extra, zmq::recv_flags::none);
  }
  return PeerMessage{id.to_string(), wire::Message::parse(body.to_string_view())};
}

void ControlServer::send(const std::string& peer, const std::string& frame) {
  try {
    socket_.send(zmq::buffer(peer), zmq::send_flags::sndmore);
    socket_.send(zmq::buffer(frame), zmq::send_flags::none);
  } catch (const zmq::error_t& e) {
    throw_runtime("cannot send to worker " + peer + ": " + e.what());
  }
}

ControlClient::ControlClient(zmq::context_t& ctx, const std::string& endpoint, const std::string& identity,
                             int linger_ms)
    : socket_(ctx, zmq::socket_type::dealer) {
  socket_.set(zmq::sockopt::linger, linger_ms);
  socket_.set(zmq::sockopt::routing_id, identity);
  try {
    socket_.connect(endpoint);
  } catch (const zmq::error_t& e) {
    throw_runtime("cannot connect to coordinator at " + endpoint + ": " + e.what());
  }
}

std::optional<wire::Message> ControlClient::recv(std::chrono::milliseconds timeout) {
  if (!wait_readable(socket_, timeout)) return std::nullopt;
  zmq::message_t body;
  if (!socket_.recv(body, zmq::recv_flags::dontwait)) return std::nullopt;
  return wire::Message::parse(body.to_string_view());
}

void ControlClient::send(const std::string& frame) {
  socket_.send(zmq::buffer(frame), zmq::send_flags::none);
}

bool ControlClient::try_send(const std::string& frame) {
  return socket_.send(zmq::buffer(frame), zmq::send_flags::dontwait).has_value();
}

}  // namespace devmap
