#include "transport/mpi_edge_relay.h"

#include <mpi.h>
#include <sys/stat.h>

#include <climits>
#include <deque>

#include "core/base/error.h"
#include "transport/shm_segment.h"
#include "transport/wire.h"

namespace devmap {
namespace {

int header_tag(int edge) {
  return kRelayTagBase + 2 * edge;
}
int payload_tag(int edge) {
  return kRelayTagBase + 2 * edge + 1;
}

bool completed(MPI_Request (&requests)[2], const char* what) {
  int done = 0;
  check_mpi(MPI_Testall(2, requests, &done, MPI_STATUSES_IGNORE), what);
  return done != 0;
}

class MpiEdgeRelay final : public EdgeRelay {
 public:
  explicit MpiEdgeRelay(RelayPlan plan) : rank_(plan.rank) {
    for (RelayEdge& e : plan.edges) add_edge(std::move(e), plan.endpoints);
    for (auto& [id, st] : edges_) post_receives(st);
  }

  ~MpiEdgeRelay() override {
    for (auto& [id, st] : edges_) {
      for (Incoming& in : st.incoming)
        for (MPI_Request& r : in.requests) {
          if (r == MPI_REQUEST_NULL) continue;
          MPI_Cancel(&r);
          MPI_Wait(&r, MPI_STATUS_IGNORE);
        }
      for (Route& route : st.routes)
        for (Outgoing& out : route.queue)
          for (MPI_Request& r : out.requests)
            if (r != MPI_REQUEST_NULL) MPI_Request_free(&r);  // the send still completes
    }
  }

  bool pump() override {
    for (auto& [device, socket] : pull_) take_handles(device, socket);
    for (auto& [id, st] : edges_) {
      for (Route& route : st.routes) finish_sends(st, route);
      finish_receives(st);
    }
    // A worker here may hand over a tensor at any moment, and one from
    // another host arrives only while MPI is called: always poll again soon.
    return !edges_.empty();
  }

 private:
  // One tensor on its way to one other host.
  struct Outgoing {
    wire::TensorHandle handle{};
    MPI_Request requests[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    bool sent = false;
    int readies = 0;                   // TENSOR_READYs for the host's consumers seen so far
    std::vector<std::string> waiting;  // consumers to release for once it is sent
  };
  // The consumers of an edge on one other host.
  struct Route {
    int rank = 0;
    int consumers = 0;
    std::deque<Outgoing> queue;  // oldest first
  };
  // A receive posted into one slot of this host's ring.
  struct Incoming {
    uint32_t slot = 0;
    wire::TensorHandle header{};
    MPI_Request requests[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  };
  struct EdgeState {
    EdgeState(RelayEdge e, ShmSegment s) : plan(std::move(e)), segment(std::move(s)) {}
    RelayEdge plan;
    ShmSegment segment;
    bool producing_here = false;
    std::vector<Route> routes;  // producing here: one per other host with consumers
    // Produced elsewhere: this host's consumers, their holds on each slot,
    // the receives posted (oldest first) and the next slot to post into.
    std::vector<std::string> local_consumers;
    std::vector<int> outstanding;
    std::deque<Incoming> incoming;
    uint64_t next = 0;

    char* slot(uint32_t s) const { return static_cast<char*>(segment.data()) + s * plan.edge.slot_bytes; }
  };

  void add_edge(RelayEdge e, const std::map<std::string, std::string>& endpoints) {
    const ChannelEdge& ce = e.edge;
    if (header_tag(ce.id) + 1 >= kMaxTag)
      throw_runtime("edge " + std::to_string(ce.id) + " is beyond the " +
                    std::to_string((kMaxTag - kRelayTagBase) / 2) + " edges MPI's tags can relay between hosts");
    if (ce.slot_bytes > static_cast<uint64_t>(INT_MAX))
      throw_runtime("edge " + std::to_string(ce.id) + "'s slots of " + std::to_string(ce.slot_bytes) +
                    " bytes are over the 2 GiB one MPI message carries between hosts");
    EdgeState st(e, ShmSegment::open(ce.segment));
    st.producing_here = e.producer_rank == rank_;
    for (size_t i = 0; i < ce.consumers.size(); ++i) {
      const std::string& c = ce.consumers[i];
      const int r = e.consumer_ranks.at(i);
      if (r == rank_) {
        st.local_consumers.push_back(c);
        connect(c, endpoints);
      } else if (st.producing_here) {
        bind(c, endpoints);  // its TENSOR_READYs come here
        Route* route = nullptr;
        for (Route& x : st.routes) route = x.rank == r ? &x : route;
        if (!route) route = &st.routes.emplace_back(Route{r, 0, {}});
        ++route->consumers;
      }
    }
    if (st.producing_here) {
      connect(ce.producer, endpoints);  // releases go to it
    } else {
      bind(ce.producer, endpoints);  // this host's consumers release its slots here
      st.outstanding.assign(ce.slots, 0);
    }
    edges_.emplace(ce.id, std::move(st));
  }

  void bind(const std::string& remote_device, const std::map<std::string, std::string>& endpoints) {
    if (pull_.count(remote_device)) return;
    zmq::socket_t s(ctx_, zmq::socket_type::pull);
    s.set(zmq::sockopt::linger, 0);
    const std::string& path = endpoints.at(remote_device);
    s.bind("ipc://" + path);
    ::chmod(path.c_str(), 0600);
    pull_.emplace(remote_device, std::move(s));
  }

  void connect(const std::string& local_device, const std::map<std::string, std::string>& endpoints) {
    if (push_.count(local_device)) return;
    zmq::socket_t s(ctx_, zmq::socket_type::push);
    s.set(zmq::sockopt::linger, 0);
    s.connect("ipc://" + endpoints.at(local_device));
    push_.emplace(local_device, std::move(s));
  }

  void push(const std::string& device, wire::MsgType type, const wire::TensorHandle& h) {
    push_.at(device).send(zmq::buffer(wire::frame(type, h)), zmq::send_flags::none);
  }

  EdgeState& state(uint32_t edge, const std::string& from) {
    auto it = edges_.find(static_cast<int>(edge));
    if (it == edges_.end())
      throw_runtime("a handle for edge " + std::to_string(edge) +
                    ", which does not cross hosts, came to the relay for " + from);
    return it->second;
  }

  // What this host's workers sent to `remote_device`'s socket.
  void take_handles(const std::string& remote_device, zmq::socket_t& socket) {
    zmq::message_t msg;
    while (socket.recv(msg, zmq::recv_flags::dontwait)) {
      wire::Message m = wire::Message::parse(msg.to_string_view());
      const auto h = m.as<wire::TensorHandle>();
      EdgeState& st = state(h.edge, remote_device);
      if (h.slot >= st.plan.edge.slots)
        throw_runtime("relay: a handle for slot " + std::to_string(h.slot) + " out of range");
      if (m.type == wire::MsgType::kTensorReady && st.producing_here)
        send_tensor(st, remote_device, h);
      else if (m.type == wire::MsgType::kSlotRelease && !st.producing_here)
        release_slot(st, h);
      else
        throw_runtime(std::string("relay: unexpected ") + wire::msg_type_name(m.type) + " for " + remote_device);
    }
  }

  // The producer here made a tensor for `consumer` on another host: its
  // bytes go once to that host, whichever of its consumers asks first.
  void send_tensor(EdgeState& st, const std::string& consumer, const wire::TensorHandle& h) {
    const ChannelEdge& ce = st.plan.edge;
    int rank = -1;
    for (size_t i = 0; i < ce.consumers.size(); ++i)
      if (ce.consumers[i] == consumer) rank = st.plan.consumer_ranks[i];
    Route* route = nullptr;
    for (Route& r : st.routes) route = r.rank == rank ? &r : route;
    if (!route) throw_runtime("relay: " + consumer + " does not consume edge " + std::to_string(ce.id));
    Outgoing* out = nullptr;
    for (Outgoing& o : route->queue)
      if (o.handle.step == h.step && o.handle.micro == h.micro) out = &o;
    if (!out) {
      if (h.bytes > ce.slot_bytes)
        throw_runtime("relay: a tensor of " + std::to_string(h.bytes) + " bytes on edge " + std::to_string(ce.id) +
                      " is larger than its slots");
      out = &route->queue.emplace_back();
      out->handle = h;
      check_mpi(MPI_Isend(&out->handle, sizeof out->handle, MPI_BYTE, route->rank, header_tag(ce.id), MPI_COMM_WORLD,
                          &out->requests[0]),
                "MPI_Isend (relay handle)");
      check_mpi(MPI_Isend(st.slot(h.slot), static_cast<int>(h.bytes), MPI_BYTE, route->rank, payload_tag(ce.id),
                          MPI_COMM_WORLD, &out->requests[1]),
                "MPI_Isend (relay tensor)");
    }
    ++out->readies;
    if (out->sent)
      push(ce.producer, wire::MsgType::kSlotRelease, out->handle);
    else
      out->waiting.push_back(consumer);
  }

  // Releases the producer's slot for each consumer whose tensor is sent.
  void finish_sends(EdgeState& st, Route& route) {
    for (Outgoing& out : route.queue) {
      if (out.sent || !completed(out.requests, "MPI_Testall (relay send)")) continue;
      out.sent = true;
      for (size_t i = 0; i < out.waiting.size(); ++i)
        push(st.plan.edge.producer, wire::MsgType::kSlotRelease, out.handle);
      out.waiting.clear();
    }
    while (!route.queue.empty() && route.queue.front().sent && route.queue.front().readies == route.consumers)
      route.queue.pop_front();
  }

  // Posts receives into the ring's free slots, in the ring's order.
  void post_receives(EdgeState& st) {
    if (st.producing_here) return;
    const ChannelEdge& ce = st.plan.edge;
    for (;;) {
      const uint32_t slot = static_cast<uint32_t>(st.next % ce.slots);
      if (st.incoming.size() >= ce.slots || st.outstanding[slot] > 0) return;
      Incoming& in = st.incoming.emplace_back();
      in.slot = slot;
      check_mpi(MPI_Irecv(&in.header, sizeof in.header, MPI_BYTE, st.plan.producer_rank, header_tag(ce.id),
                          MPI_COMM_WORLD, &in.requests[0]),
                "MPI_Irecv (relay handle)");
      check_mpi(MPI_Irecv(st.slot(slot), static_cast<int>(ce.slot_bytes), MPI_BYTE, st.plan.producer_rank,
                          payload_tag(ce.id), MPI_COMM_WORLD, &in.requests[1]),
                "MPI_Irecv (relay tensor)");
      ++st.next;
    }
  }

  // Hands each tensor that has arrived, in order, to this host's consumers.
  void finish_receives(EdgeState& st) {
    while (!st.incoming.empty() && completed(st.incoming.front().requests, "MPI_Testall (relay receive)")) {
      const Incoming in = st.incoming.front();
      st.incoming.pop_front();
      wire::TensorHandle h = in.header;
      h.slot = in.slot;
      st.outstanding[in.slot] = static_cast<int>(st.local_consumers.size());
      for (const std::string& c : st.local_consumers) push(c, wire::MsgType::kTensorReady, h);
    }
  }

  void release_slot(EdgeState& st, const wire::TensorHandle& h) {
    if (st.outstanding[h.slot] <= 0)
      throw_runtime("relay: slot " + std::to_string(h.slot) + " of edge " + std::to_string(h.edge) + " released twice");
    --st.outstanding[h.slot];
    post_receives(st);
  }

  int rank_;
  zmq::context_t ctx_;
  std::map<std::string, zmq::socket_t> pull_;  // by device on another host: bound at its data socket here
  std::map<std::string, zmq::socket_t> push_;  // by device on this host: its data socket
  std::map<int, EdgeState> edges_;
};

}  // namespace

std::unique_ptr<EdgeRelay> make_mpi_edge_relay(const MpiSession& mpi, RelayPlan plan) {
  if (plan.rank != mpi.rank())
    throw_runtime("relay planned for rank " + std::to_string(plan.rank) + " on rank " + std::to_string(mpi.rank()));
  return std::make_unique<MpiEdgeRelay>(std::move(plan));
}

}  // namespace devmap
