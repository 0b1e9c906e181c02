#include "transport/wire.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "core/base/error.h"
#include "transport/control_channel.h"
#include "transport/params_io.h"

namespace devmap {
namespace {

TEST(Wire, FramesRoundTrip) {
  wire::Step s{7, 64, 0, 64, 1, wire::kTrain, 4, 0};
  wire::Message m = wire::Message::parse(wire::frame(wire::MsgType::kStep, s));
  EXPECT_EQ(m.type, wire::MsgType::kStep);
  wire::Step t = m.as<wire::Step>();
  EXPECT_EQ(t.step, 7);
  EXPECT_EQ(t.batch, 64);
  EXPECT_EQ(t.slot, 1u);
  EXPECT_EQ(t.flags, wire::kTrain);
}

TEST(Wire, MalformedFramesAreErrors) {
  EXPECT_THROW(wire::Message::parse("short"), Error);
  std::string f = wire::frame(wire::MsgType::kStep, wire::Step{});
  EXPECT_THROW(wire::Message::parse(f.substr(0, f.size() - 1)), Error) << "length disagrees with header";
  std::string bad_magic = f;
  bad_magic[0] ^= 1;
  EXPECT_THROW(wire::Message::parse(bad_magic), Error);
  std::string bad_type = f;
  bad_type[4] = 99;
  EXPECT_THROW(wire::Message::parse(bad_type), Error);
  wire::Message m = wire::Message::parse(wire::frame(wire::MsgType::kStep, std::string_view("abc")));
  EXPECT_THROW(m.as<wire::Step>(), Error) << "body too short for a Step";
}

TEST(Wire, NamesAreTruncatedAndTerminated) {
  wire::Hello h{};
  wire::copy_name(h.device, "a-device-name-that-is-far-too-long-for-the-field");
  EXPECT_EQ(wire::read_name(h.device).size(), sizeof h.device - 1);
}

TEST(ParamsIo, EntriesRoundTripWithTheirDtype) {
  ParamsIo io;
  io.op = ParamsIo::Op::kLoad;
  io.path = "/tmp/w.safetensors";
  io.entries = {{"bn1.weight", 128, 64, FileDtype::kF32}, {"bn1.num_batches_tracked", 192, 8, FileDtype::kI64}};
  const std::string bytes = encode_params_io(io);
  const ParamsIo back = decode_params_io(bytes);
  EXPECT_EQ(back.op, ParamsIo::Op::kLoad);
  EXPECT_EQ(back.path, io.path);
  ASSERT_EQ(back.entries.size(), 2u);
  EXPECT_EQ(back.entries[1].name, "bn1.num_batches_tracked");
  EXPECT_EQ(back.entries[1].offset, 192u);
  EXPECT_EQ(back.entries[1].bytes, 8u);
  EXPECT_EQ(back.entries[1].dtype, FileDtype::kI64);
  std::string bad_dtype = bytes;
  bad_dtype.back() = 7;
  EXPECT_THROW(decode_params_io(bad_dtype), Error);
  EXPECT_THROW(decode_params_io(bytes.substr(0, bytes.size() - 1)), Error);
}

TEST(ControlChannel, AWorkerAndTheCoordinatorExchangeMessages) {
  zmq::context_t ctx(1);
  std::string path = "/tmp/devmap-test-" + std::to_string(::getpid()) + ".sock";
  {
    ControlServer server(ctx, path);
    ControlClient client(ctx, server.endpoint(), "cpu:0");
    wire::Hello hello{wire::kProtocolVersion, 1234, {}};
    client.send(wire::frame(wire::MsgType::kHello, hello));
    auto got = server.recv(std::chrono::milliseconds(2000));
    ASSERT_TRUE(got.has_value());
    EXPECT_EQ(got->peer, "cpu:0");
    EXPECT_EQ(got->message.as<wire::Hello>().pid, 1234);
    server.send("cpu:0", wire::frame(wire::MsgType::kShutdown, std::string_view()));
    auto reply = client.recv(std::chrono::milliseconds(2000));
    ASSERT_TRUE(reply.has_value());
    EXPECT_EQ(reply->type, wire::MsgType::kShutdown);
    EXPECT_FALSE(server.recv(std::chrono::milliseconds(10)).has_value()) << "would-block is an empty optional";
    EXPECT_THROW(server.send("cpu:9", wire::frame(wire::MsgType::kShutdown, std::string_view())), Error)
        << "sending to an unknown peer is an error, not a silent drop";
  }
  ::unlink(path.c_str());
}

}  // namespace
}  // namespace devmap
