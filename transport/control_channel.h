// The control channel between the coordinator and its workers: one ZeroMQ
// ROUTER socket bound by the coordinator on an ipc endpoint, one DEALER per
// worker that names itself by its device ("cpu:0"). Frames are wire
// messages (transport/wire.h). Would-block is an empty optional; a broken
// frame is a devmap::Error. Only one thread may use a socket.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <zmq.hpp>

#include "transport/wire.h"

namespace devmap {

struct PeerMessage {
  std::string peer;  // the worker's identity (its device name)
  wire::Message message;
};

class ControlServer {
 public:
  // Binds a ROUTER at "ipc://<socket_path>" and makes the socket file 0600.
  ControlServer(zmq::context_t& ctx, const std::string& socket_path);
  std::optional<PeerMessage> recv(std::chrono::milliseconds timeout);
  // Throws devmap::Error when the peer is not connected.
  void send(const std::string& peer, const std::string& frame);
  const std::string& endpoint() const { return endpoint_; }

 private:
  zmq::socket_t socket_;
  std::string endpoint_;
};

class ControlClient {
 public:
  // `linger_ms`: how long closing waits for unsent messages (a final ERROR
  // or BYE should reach the coordinator; heartbeats need not).
  ControlClient(zmq::context_t& ctx, const std::string& endpoint, const std::string& identity, int linger_ms = 2000);
  std::optional<wire::Message> recv(std::chrono::milliseconds timeout);
  void send(const std::string& frame);
  // Never blocks: false when the message could not be queued (the
  // coordinator is not reading and the queue is full).
  bool try_send(const std::string& frame);

 private:
  zmq::socket_t socket_;
};

}  // namespace devmap
