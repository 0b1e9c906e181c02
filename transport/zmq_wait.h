// Waiting for one ZeroMQ socket to become readable. A signal that
// interrupts the wait (the coordinator's SIGINT handler) counts as a
// timeout: the caller checks its flags and waits again.
#pragma once

#include <cerrno>
#include <chrono>
#include <zmq.hpp>

namespace devmap {

inline bool wait_readable(zmq::socket_t& socket, std::chrono::milliseconds timeout) {
  zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
  try {
    return zmq::poll(&item, 1, timeout) > 0;
  } catch (const zmq::error_t& e) {
    if (e.num() == EINTR) return false;
    throw;
  }
}

}  // namespace devmap
