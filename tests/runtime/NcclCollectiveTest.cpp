// How NCCL is called for each collective kind, without a GPU: the count each call gets, the
// buffers it needs (NCCL's shapes, which the float64 reference and the baseline's allocations
// follow), what the reports call it, and the calls NcclLibrary::enqueue makes, through a fake
// library that records them.
#include "runtime/NcclCollective.h"

#include "abi/CollectiveShapes.h"
#include "runtime/NcclLibrary.h"

#include <gtest/gtest.h>
#include <string>
#include <vector>

namespace collc {
namespace {

TEST(NcclCollective, CallNamesAreNcclsOwn) {
  EXPECT_EQ(ncclCallName(CollectiveKind::AllReduce), "ncclAllReduce");
  EXPECT_EQ(ncclCallName(CollectiveKind::AllGather), "ncclAllGather");
  EXPECT_EQ(ncclCallName(CollectiveKind::ReduceScatter), "ncclReduceScatter");
  EXPECT_EQ(ncclCallName(CollectiveKind::Broadcast), "ncclBroadcast");
  EXPECT_EQ(ncclCallName(CollectiveKind::Reduce), "ncclReduce");
  EXPECT_EQ(ncclCallName(CollectiveKind::AllToAll), "ncclSend/ncclRecv");
}

TEST(NcclCollective, ShapesFollowNcclsBuffers) {
  struct Expected {
    CollectiveKind kind;
    uint64_t in, out;
    int calls;
    bool grouped;
  };
  // 1000 elements on 4 ranks.
  for (const Expected& e : {Expected{CollectiveKind::AllReduce, 1000, 1000, 1, false},
                            Expected{CollectiveKind::AllGather, 1000, 4000, 1, false},
                            Expected{CollectiveKind::ReduceScatter, 4000, 1000, 1, false},
                            Expected{CollectiveKind::Broadcast, 1000, 1000, 1, false},
                            Expected{CollectiveKind::Reduce, 1000, 1000, 1, false},
                            Expected{CollectiveKind::AllToAll, 4000, 4000, 8, true}}) {
    SCOPED_TRACE(std::string(name(e.kind)));
    NcclCallShape shape = ncclCallShape(e.kind, 1000, 4);
    // NCCL's count is collc's n: sendcount of an allgather, recvcount of a reducescatter, the
    // elements per peer of an alltoall's ncclSend/ncclRecv.
    EXPECT_EQ(shape.ncclCount, 1000u);
    EXPECT_EQ(shape.inputElems, e.in);
    EXPECT_EQ(shape.outputElems, e.out);
    EXPECT_EQ(shape.bufferElems(), std::max(e.in, e.out));
    EXPECT_EQ(shape.callsPerOp, e.calls);
    EXPECT_EQ(shape.grouped, e.grouped);
  }
  // On 8 ranks the per-rank blocks grow with the ranks; the others do not.
  EXPECT_EQ(ncclCallShape(CollectiveKind::AllGather, 1000, 8).outputElems, 8000u);
  EXPECT_EQ(ncclCallShape(CollectiveKind::AllToAll, 1000, 8).callsPerOp, 16);
  EXPECT_EQ(ncclCallShape(CollectiveKind::AllReduce, 1000, 8).bufferElems(), 1000u);
}

TEST(NcclCollective, DescriptionsNameTheCallAndRoot) {
  NcclCollective collective;
  EXPECT_EQ(describeNcclCall(collective), "ncclAllReduce");
  collective.root = 3; // a root means nothing to an allreduce
  EXPECT_EQ(describeNcclCall(collective), "ncclAllReduce");
  collective.kind = CollectiveKind::Reduce;
  EXPECT_EQ(describeNcclCall(collective), "ncclReduce (root 3)");
  collective.kind = CollectiveKind::AllToAll;
  EXPECT_EQ(describeNcclCall(collective),
            "ncclSend/ncclRecv to every rank in one group (NCCL has no alltoall call)");
  EXPECT_EQ(describeNcclCalls({collective}), describeNcclCall(collective));
  EXPECT_EQ(describeNcclCalls({}), "");
  NcclCollective gather;
  gather.kind = CollectiveKind::AllGather;
  EXPECT_EQ(describeNcclCalls({gather, collective}),
            "NCCL's same collective per kind (allgather: ncclAllGather; alltoall: "
            "ncclSend/ncclRecv to every rank in one group)");
}

TEST(NcclCollective, TakenFromTheCompiledCollective) {
  CompiledCollective compiled;
  compiled.kind = CollectiveKind::Broadcast;
  compiled.dtype = DType::F16;
  compiled.op = ReduceOp::Max;
  compiled.root = 1;
  NcclCollective collective = ncclCollectiveOf(compiled);
  EXPECT_EQ(collective.kind, CollectiveKind::Broadcast);
  EXPECT_EQ(collective.dtype, DType::F16);
  EXPECT_EQ(collective.op, ReduceOp::Max);
  EXPECT_EQ(collective.root, 1);
}

// ---- NcclLibrary::enqueue through a fake library -----------------------------------------

/// What the fake NCCL functions were called with, in order.
struct Call {
  std::string function;
  const void* send = nullptr;
  const void* recv = nullptr;
  size_t count = 0;
  ncclDataType_t type = ncclFloat32;
  ncclRedOp_t op = ncclSum;
  int rootOrPeer = -1;
};
std::vector<Call> calls;

/// A library whose functions only record their calls (no GPU, no NCCL).
NcclLibrary fakeLibrary() {
  NcclLibrary lib;
  lib.versionCode = 22803;
  lib.path = "/fake/libnccl.so.2";
  lib.getErrorString = [](ncclResult_t) { return "fake error"; };
  lib.groupStart = [] {
    calls.push_back({"ncclGroupStart"});
    return ncclSuccess;
  };
  lib.groupEnd = [] {
    calls.push_back({"ncclGroupEnd"});
    return ncclSuccess;
  };
  lib.allReduce = [](const void* s, void* r, size_t n, ncclDataType_t t, ncclRedOp_t op, ncclComm_t,
                     cudaStream_t) {
    calls.push_back({"ncclAllReduce", s, r, n, t, op});
    return ncclSuccess;
  };
  lib.allGather = [](const void* s, void* r, size_t n, ncclDataType_t t, ncclComm_t, cudaStream_t) {
    calls.push_back({"ncclAllGather", s, r, n, t});
    return ncclSuccess;
  };
  lib.reduceScatter = [](const void* s, void* r, size_t n, ncclDataType_t t, ncclRedOp_t op,
                         ncclComm_t, cudaStream_t) {
    calls.push_back({"ncclReduceScatter", s, r, n, t, op});
    return ncclSuccess;
  };
  lib.broadcast = [](const void* s, void* r, size_t n, ncclDataType_t t, int root, ncclComm_t,
                     cudaStream_t) {
    calls.push_back({"ncclBroadcast", s, r, n, t, ncclSum, root});
    return ncclSuccess;
  };
  lib.reduce = [](const void* s, void* r, size_t n, ncclDataType_t t, ncclRedOp_t op, int root,
                  ncclComm_t, cudaStream_t) {
    calls.push_back({"ncclReduce", s, r, n, t, op, root});
    return ncclSuccess;
  };
  lib.send = [](const void* s, size_t n, ncclDataType_t t, int peer, ncclComm_t, cudaStream_t) {
    calls.push_back({"ncclSend", s, nullptr, n, t, ncclSum, peer});
    return ncclSuccess;
  };
  lib.recv = [](void* r, size_t n, ncclDataType_t t, int peer, ncclComm_t, cudaStream_t) {
    calls.push_back({"ncclRecv", nullptr, r, n, t, ncclSum, peer});
    return ncclSuccess;
  };
  return lib;
}

TEST(NcclCollective, EnqueueMakesTheKindsOwnCall) {
  const NcclLibrary lib = fakeLibrary();
  char in[64], out[64];
  NcclCollective collective;
  collective.dtype = DType::BF16;
  collective.op = ReduceOp::Max;
  collective.root = 1;
  for (CollectiveKind kind :
       {CollectiveKind::AllReduce, CollectiveKind::AllGather, CollectiveKind::ReduceScatter,
        CollectiveKind::Broadcast, CollectiveKind::Reduce}) {
    SCOPED_TRACE(std::string(name(kind)));
    collective.kind = kind;
    calls.clear();
    Error err = lib.enqueue(collective, 7, 4, in, out, nullptr, nullptr);
    ASSERT_FALSE(static_cast<bool>(err)) << toString(std::move(err));
    ASSERT_EQ(calls.size(), 1u);
    EXPECT_EQ(calls[0].function, ncclCallName(kind));
    EXPECT_EQ(calls[0].send, in);
    EXPECT_EQ(calls[0].recv, out);
    EXPECT_EQ(calls[0].count, 7u); // collc's n, never n * nranks
    EXPECT_EQ(calls[0].type, ncclBfloat16);
    if (reduces(kind)) {
      EXPECT_EQ(calls[0].op, ncclMax);
    }
    if (hasRoot(kind)) {
      EXPECT_EQ(calls[0].rootOrPeer, 1);
    }
  }
}

TEST(NcclCollective, EnqueuedAllToAllIsOneGroupOfSendsAndRecvs) {
  const NcclLibrary lib = fakeLibrary();
  float in[3 * 5], out[3 * 5];
  NcclCollective collective;
  collective.kind = CollectiveKind::AllToAll;
  calls.clear();
  Error err = lib.enqueue(collective, 5, 3, in, out, nullptr, nullptr);
  ASSERT_FALSE(static_cast<bool>(err)) << toString(std::move(err));
  ASSERT_EQ(calls.size(), 2u + 2 * 3);
  EXPECT_EQ(calls.front().function, "ncclGroupStart");
  EXPECT_EQ(calls.back().function, "ncclGroupEnd");
  for (int peer = 0; peer < 3; ++peer) {
    // Block `peer` of the input goes to rank `peer`; block `peer` of the output comes from it.
    const Call& send = calls[1 + 2 * peer];
    const Call& recv = calls[2 + 2 * peer];
    EXPECT_EQ(send.function, "ncclSend");
    EXPECT_EQ(send.rootOrPeer, peer);
    EXPECT_EQ(send.send, in + 5 * peer);
    EXPECT_EQ(send.count, 5u);
    EXPECT_EQ(recv.function, "ncclRecv");
    EXPECT_EQ(recv.rootOrPeer, peer);
    EXPECT_EQ(recv.recv, out + 5 * peer);
    EXPECT_EQ(recv.count, 5u);
  }
}

TEST(NcclCollective, EnqueueEndsTheGroupAfterAFailedSend) {
  NcclLibrary lib = fakeLibrary();
  lib.send = [](const void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) {
    calls.push_back({"ncclSend"});
    return ncclInvalidArgument;
  };
  NcclCollective collective;
  collective.kind = CollectiveKind::AllToAll;
  float in[4], out[4];
  calls.clear();
  const std::string message = toString(lib.enqueue(collective, 2, 2, in, out, nullptr, nullptr));
  EXPECT_NE(message.find("send("), std::string::npos) << message;
  EXPECT_NE(message.find("fake error"), std::string::npos) << message;
  // No receive after the failed send, and the group is still ended (NCCL drops what it holds).
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[1].function, "ncclSend");
  EXPECT_EQ(calls[2].function, "ncclGroupEnd");
}

TEST(NcclCollective, EnqueueRefusesAKindThisNcclCannotRun) {
  NcclLibrary lib = fakeLibrary();
  lib.send = nullptr;
  lib.recv = nullptr;
  NcclCollective collective;
  collective.kind = CollectiveKind::AllToAll;
  float in[4], out[4];
  calls.clear();
  const std::string message = toString(lib.enqueue(collective, 2, 2, in, out, nullptr, nullptr));
  EXPECT_NE(message.find("lacks ncclSend, ncclRecv"), std::string::npos) << message;
  EXPECT_TRUE(calls.empty()) << "nothing may be enqueued, not even the group";
}

} // namespace
} // namespace collc
