// The C API without a GPU: every pointer checked, errors with their status and message, the last
// error per thread, compiling a spec by name and from text.
#include "collc/collc.h"
#include "runtime/BundleFile.h"
#include "runtime/CApiSupport.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <fstream>
#include <gtest/gtest.h>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

std::string lastError() {
  return collc_last_error();
}

std::string readStdlib(const std::string& name) {
  std::ifstream file(std::string(COLLC_STDLIB_DIR) + "/" + name + ".coll");
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// The one-shot AllReduce without `wait push`: the reduce reads what peers put without waiting.
const char* kReadsBeforeWait = R"(collective broken kind allreduce
  buffers in: T[n], out: T[n]
  scratch slot[nranks]: T[n]
{
  step push {
    for p in peers { put in -> p.slot[rank] }
  }
  step reduce {
    out = reduce(in, slot[peers])
  }
}
)";

TEST(CApi, NullPointersAreInvalidArguments) {
  collc_compiled* compiled = nullptr;
  collc_world* world = nullptr;
  collc_instance* instance = nullptr;
  collc_dispatcher* dispatcher = nullptr;
  collc_compile_options options;
  ASSERT_EQ(collc_compile_options_init(&options), COLLC_OK);
  const int devices[2] = {0, 1};
  int n = 0;
  uint64_t bytes = 0;

  EXPECT_EQ(collc_compile(nullptr, &options, &compiled), COLLC_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("collc_compile: spec_name_or_path is null"), std::string::npos)
      << lastError();
  EXPECT_EQ(collc_compile("allreduce_oneshot", &options, nullptr), COLLC_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("out is null"), std::string::npos) << lastError();
  EXPECT_EQ(collc_compile_text("x.coll", nullptr, &options, &compiled), COLLC_INVALID_ARGUMENT);
  EXPECT_EQ(compiled, nullptr);
  EXPECT_EQ(collc_compile_options_init(nullptr), COLLC_INVALID_ARGUMENT);
  EXPECT_EQ(collc_device_count(nullptr), COLLC_INVALID_ARGUMENT);

  EXPECT_EQ(collc_world_create_local(nullptr, 2, 0, &world), COLLC_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("devices is null"), std::string::npos) << lastError();
  EXPECT_EQ(collc_world_create_local(devices, 2, 0, nullptr), COLLC_INVALID_ARGUMENT);
  EXPECT_EQ(collc_world_create_local(devices, 0, 0, &world), COLLC_INVALID_ARGUMENT);
  EXPECT_EQ(collc_world_create_local(devices, 99, 0, &world), COLLC_INVALID_ARGUMENT);
  EXPECT_EQ(collc_world_create_shared_gpu(0, 2, 0, nullptr), COLLC_INVALID_ARGUMENT);
  EXPECT_EQ(collc_world_create_shared_gpu(0, 0, 0, &world), COLLC_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("0 ranks"), std::string::npos) << lastError();
  EXPECT_EQ(collc_world_create_shared_gpu(0, 73, 0, &world), COLLC_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("73 ranks; 1 to 72 are supported"), std::string::npos) << lastError();
  // 72 ranks are within the ABI, but one GPU gives at most 32 streams a hardware queue each.
  EXPECT_EQ(collc_world_create_shared_gpu(0, 72, 0, &world), COLLC_UNSUPPORTED);
  EXPECT_NE(lastError().find("72 ranks cannot each have a hardware work queue"), std::string::npos)
      << lastError();
  EXPECT_EQ(world, nullptr);
  EXPECT_EQ(collc_world_create_process(0, 2, 0, 0, nullptr, nullptr, &world),
            COLLC_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("allgather is null"), std::string::npos) << lastError();
  EXPECT_EQ(
      collc_world_create_process_nccl_id(0, 2, 0, nullptr, COLLC_NCCL_UNIQUE_ID_BYTES, 0, &world),
      COLLC_INVALID_ARGUMENT);
  EXPECT_EQ(collc_world_adopt_nccl_comm(nullptr, 0, &world), COLLC_INVALID_ARGUMENT);
  EXPECT_EQ(collc_nccl_unique_id(nullptr, COLLC_NCCL_UNIQUE_ID_BYTES), COLLC_INVALID_ARGUMENT);
  char shortId[16];
  EXPECT_EQ(collc_nccl_unique_id(shortId, sizeof shortId), COLLC_INVALID_ARGUMENT);
  EXPECT_EQ(collc_world_nranks(nullptr, &n), COLLC_INVALID_ARGUMENT);
  EXPECT_EQ(collc_world_heap_bytes(nullptr, &bytes), COLLC_INVALID_ARGUMENT);
  EXPECT_EQ(collc_world_local_ranks(nullptr, nullptr, 0, &n), COLLC_INVALID_ARGUMENT);
  EXPECT_EQ(collc_world_device(nullptr, 0, &n), COLLC_INVALID_ARGUMENT);
  void* stream = nullptr;
  EXPECT_EQ(collc_world_stream(nullptr, 0, &stream), COLLC_INVALID_ARGUMENT);

  EXPECT_EQ(collc_compiled_in_place(nullptr), 0);
  EXPECT_EQ(collc_compiled_info(nullptr, nullptr, nullptr, &n, nullptr), COLLC_INVALID_ARGUMENT);
  EXPECT_EQ(collc_compiled_buffer_counts(nullptr, 1, &bytes, &bytes), COLLC_INVALID_ARGUMENT);
  EXPECT_EQ(collc_compiled_heap_bytes(nullptr, 1, &bytes), COLLC_INVALID_ARGUMENT);
  EXPECT_EQ(collc_compiled_kernel_name(nullptr), nullptr);
  EXPECT_EQ(collc_compiled_cuda_source(nullptr), nullptr);

  EXPECT_EQ(collc_instance_create(nullptr, nullptr, 1, &instance), COLLC_INVALID_ARGUMENT);
  EXPECT_EQ(collc_instance_create(nullptr, nullptr, 1, nullptr), COLLC_INVALID_ARGUMENT);
  EXPECT_EQ(instance, nullptr);
  EXPECT_EQ(collc_launch(nullptr, 0, &n, &n, nullptr, 0, 1, nullptr), COLLC_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("collc_launch: instance is null"), std::string::npos) << lastError();
  EXPECT_EQ(collc_instance_synchronize(nullptr, nullptr, 0), COLLC_INVALID_ARGUMENT);
  EXPECT_EQ(collc_instance_max_count(nullptr, &bytes), COLLC_INVALID_ARGUMENT);

  collc_dispatch_options dispatch;
  EXPECT_EQ(collc_dispatch_options_init(nullptr), COLLC_INVALID_ARGUMENT);
  ASSERT_EQ(collc_dispatch_options_init(&dispatch), COLLC_OK);
  EXPECT_EQ(collc_dispatcher_create(nullptr, &dispatch, &dispatcher), COLLC_INVALID_ARGUMENT);
  EXPECT_EQ(collc_dispatcher_create(nullptr, nullptr, nullptr), COLLC_INVALID_ARGUMENT);
  EXPECT_EQ(collc_dispatcher_launch(nullptr, 0, &n, &n, 1, nullptr), COLLC_INVALID_ARGUMENT);
  EXPECT_EQ(collc_dispatcher_description(nullptr), nullptr);

  // Destroying nothing is nothing, as free(NULL).
  EXPECT_EQ(collc_compiled_destroy(nullptr), COLLC_OK);
  EXPECT_EQ(collc_world_destroy(nullptr), COLLC_OK);
  EXPECT_EQ(collc_instance_destroy(nullptr), COLLC_OK);
  EXPECT_EQ(collc_dispatcher_destroy(nullptr), COLLC_OK);
}

TEST(CApi, RanksOutOfRangeAreInvalidBeforeAnythingCollective) {
  collc_world* world = nullptr;
  auto never = [](const void*, void*, size_t, void*) -> int {
    ADD_FAILURE() << "the all-gather must not be called for a wrong rank";
    return 1;
  };
  EXPECT_EQ(collc_world_create_process(2, 2, 0, 0, never, nullptr, &world), COLLC_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("rank 2 of 2"), std::string::npos) << lastError();
  EXPECT_EQ(collc_world_create_process(0, 0, 0, 0, never, nullptr, &world), COLLC_INVALID_ARGUMENT);
  EXPECT_EQ(collc_world_create_process(0, 99, 0, 0, never, nullptr, &world),
            COLLC_INVALID_ARGUMENT);
  char id[COLLC_NCCL_UNIQUE_ID_BYTES] = {};
  EXPECT_EQ(collc_world_create_process_nccl_id(0, 2, 0, id, sizeof id - 1, 0, &world),
            COLLC_INVALID_ARGUMENT);
  EXPECT_EQ(world, nullptr);
}

TEST(CApi, WithoutAGpuWorldsSaySoAndCallNoCallback) {
  int gpus = -1;
  if (collc_device_count(&gpus) == COLLC_OK)
    GTEST_SKIP() << gpus << " GPUs visible: this checks a machine without one";
  EXPECT_EQ(gpus, 0);
  EXPECT_EQ(lastError().rfind("no GPU: ", 0), 0u) << lastError();
  collc_world* world = nullptr;
  const int devices[2] = {0, 1};
  EXPECT_EQ(collc_world_create_local(devices, 2, 0, &world), COLLC_CUDA_ERROR);
  EXPECT_NE(lastError().find("no GPU"), std::string::npos) << lastError();
  EXPECT_EQ(collc_world_create_shared_gpu(0, 4, 0, &world), COLLC_CUDA_ERROR);
  EXPECT_NE(lastError().find("no GPU"), std::string::npos) << lastError();
  auto never = [](const void*, void*, size_t, void*) -> int {
    ADD_FAILURE() << "the all-gather must not be called on a machine without a GPU";
    return 1;
  };
  EXPECT_EQ(collc_world_create_process(0, 2, 0, 0, never, nullptr, &world), COLLC_CUDA_ERROR);
  EXPECT_NE(lastError().find("no GPU"), std::string::npos) << lastError();
  EXPECT_EQ(
      collc_world_create_process_flags(0, 2, 0, 0, COLLC_WORLD_SHARE_GPU, never, nullptr, &world),
      COLLC_CUDA_ERROR);
  EXPECT_NE(lastError().find("no GPU"), std::string::npos) << lastError();
  EXPECT_EQ(world, nullptr);
}

TEST(CApi, WorldFlagsAreCheckedBeforeAnythingCollective) {
  collc_world* world = nullptr;
  auto never = [](const void*, void*, size_t, void*) -> int {
    ADD_FAILURE() << "the all-gather must not be called for wrong flags";
    return 1;
  };
  EXPECT_EQ(collc_world_create_process_flags(0, 2, 0, 0, 4u, never, nullptr, &world),
            COLLC_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("unknown flags 4"), std::string::npos) << lastError();
  EXPECT_EQ(
      collc_world_create_process_flags(0, 2, 0, 0, COLLC_WORLD_SHARE_GPU, nullptr, nullptr, &world),
      COLLC_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("allgather is null"), std::string::npos) << lastError();
  EXPECT_EQ(
      collc_world_create_process_flags(3, 2, 0, 0, COLLC_WORLD_CHECK_CALLS, never, nullptr, &world),
      COLLC_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("rank 3 of 2"), std::string::npos) << lastError();
  EXPECT_EQ(world, nullptr);
}

TEST(CApi, SpecRanksAreTheDeclaredRangeWithoutAProof) {
  int low = 0, high = 0;
  ASSERT_EQ(collc_spec_ranks("allreduce_twoshot", &low, &high), COLLC_OK) << collc_last_error();
  EXPECT_EQ(low, 2);
  EXPECT_EQ(high, 72);
  ASSERT_EQ(collc_spec_ranks("allreduce_oneshot", &low, &high), COLLC_OK) << collc_last_error();
  EXPECT_EQ(high, 72);
  EXPECT_EQ(collc_spec_ranks("no_such_spec", &low, &high), COLLC_SPEC_ERROR);
  EXPECT_NE(std::string(collc_last_error()).find("no_such_spec"), std::string::npos);
  EXPECT_EQ(collc_spec_ranks(nullptr, &low, &high), COLLC_INVALID_ARGUMENT);
  EXPECT_EQ(collc_spec_ranks("allreduce_oneshot", nullptr, &high), COLLC_INVALID_ARGUMENT);
}

TEST(CApi, BadSpecTextIsASpecErrorAtItsPlace) {
  collc_compiled* compiled = nullptr;
  EXPECT_EQ(collc_compile_text("broken.coll", kReadsBeforeWait, nullptr, &compiled),
            COLLC_SPEC_ERROR);
  EXPECT_EQ(compiled, nullptr);
  const std::string message = lastError();
  EXPECT_TRUE(std::regex_search(message, std::regex("broken\\.coll:9:[0-9]+: error: reads "
                                                    "'slot\\[peers\\]'")))
      << message;
  EXPECT_NE(message.find("add 'wait push'"), std::string::npos) << message;

  EXPECT_EQ(collc_compile_text(nullptr, "collective x kind nonsense\n{}\n", nullptr, &compiled),
            COLLC_SPEC_ERROR);
  EXPECT_TRUE(std::regex_search(lastError(), std::regex("<text>:1:[0-9]+: error:"))) << lastError();
}

TEST(CApi, UnknownStdlibNameIsASpecError) {
  collc_compiled* compiled = nullptr;
  EXPECT_EQ(collc_compile("allreduce_no_such_spec", nullptr, &compiled), COLLC_SPEC_ERROR);
  EXPECT_EQ(compiled, nullptr);
  EXPECT_NE(lastError().find("allreduce_no_such_spec"), std::string::npos) << lastError();
}

TEST(CApi, OptionsOutOfRangeAreInvalidArguments) {
  collc_compile_options options;
  ASSERT_EQ(collc_compile_options_init(&options), COLLC_OK);
  collc_compiled* compiled = nullptr;
  options.dtype = static_cast<collc_dtype>(7);
  EXPECT_EQ(collc_compile("allreduce_oneshot", &options, &compiled), COLLC_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("dtype 7"), std::string::npos) << lastError();
  ASSERT_EQ(collc_compile_options_init(&options), COLLC_OK);
  options.sync = static_cast<collc_sync>(-1);
  EXPECT_EQ(collc_compile("allreduce_oneshot", &options, &compiled), COLLC_INVALID_ARGUMENT);
  ASSERT_EQ(collc_compile_options_init(&options), COLLC_OK);
  options.blocks = -4;
  EXPECT_EQ(collc_compile("allreduce_oneshot", &options, &compiled), COLLC_INVALID_ARGUMENT);
  // In range for C, refused by the spec: its message says so. (Every stdlib spec declares every
  // count C allows, so a copy of the one-shot declares fewer.)
  ASSERT_EQ(collc_compile_options_init(&options), COLLC_OK);
  std::string narrow = readStdlib("allreduce_oneshot");
  const size_t range = narrow.find("ranks 2..72");
  ASSERT_NE(range, std::string::npos);
  narrow.replace(range, std::strlen("ranks 2..72"), "ranks 2..8");
  options.nranks = 9;
  EXPECT_EQ(collc_compile_text("narrow.coll", narrow.c_str(), &options, &compiled),
            COLLC_SPEC_ERROR);
  EXPECT_EQ(compiled, nullptr);
  EXPECT_NE(lastError().find("cannot compile for 9 ranks: the spec declares ranks 2..8"),
            std::string::npos)
      << lastError();
}

TEST(CApi, CompilesTheOneShotAllReduceTextAndReportsInPlace) {
  const std::string text = readStdlib("allreduce_oneshot");
  ASSERT_FALSE(text.empty()) << "cannot read " << COLLC_STDLIB_DIR << "/allreduce_oneshot.coll";
  collc_compile_options options;
  ASSERT_EQ(collc_compile_options_init(&options), COLLC_OK);
  options.dtype = COLLC_BF16;
  options.nranks = 4;
  collc_compiled* compiled = nullptr;
  ASSERT_EQ(collc_compile_text("allreduce_oneshot.coll", text.c_str(), &options, &compiled),
            COLLC_OK)
      << lastError();
  ASSERT_NE(compiled, nullptr);
  EXPECT_EQ(collc_compiled_in_place(compiled), 1);
  collc_collective kind = COLLC_ALLGATHER;
  collc_dtype dtype = COLLC_F32;
  int nranks = 0, naux = -1;
  ASSERT_EQ(collc_compiled_info(compiled, &kind, &dtype, &nranks, &naux), COLLC_OK);
  EXPECT_EQ(kind, COLLC_ALLREDUCE);
  EXPECT_EQ(dtype, COLLC_BF16);
  EXPECT_EQ(nranks, 4);
  EXPECT_EQ(naux, 0);
  uint64_t in = 0, out = 0, heap = 0;
  ASSERT_EQ(collc_compiled_buffer_counts(compiled, 1000, &in, &out), COLLC_OK);
  EXPECT_EQ(in, 1000u);
  EXPECT_EQ(out, 1000u);
  ASSERT_EQ(collc_compiled_heap_bytes(compiled, 1000, &heap), COLLC_OK);
  // At least both scratch copies of 4 slots of 1000 bf16 elements.
  EXPECT_GE(heap, 2u * 4 * 1000 * 2);
  const std::string kernel = collc_compiled_kernel_name(compiled);
  EXPECT_FALSE(kernel.empty());
  EXPECT_NE(std::string(collc_compiled_cuda_source(compiled)).find(kernel), std::string::npos);
  EXPECT_EQ(collc_compiled_destroy(compiled), COLLC_OK);
}

// Each buffer's element type: the variant's dtype, or the one the spec fixes (an FP8 output and
// its f32 scale); a buffer index out of range is refused with the range.
TEST(CApi, SaysTheElementTypeOfEveryBuffer) {
  collc_compile_options options;
  ASSERT_EQ(collc_compile_options_init(&options), COLLC_OK);
  options.dtype = COLLC_BF16;
  options.row_length = 1024;
  collc_compiled* compiled = nullptr;
  ASSERT_EQ(collc_compile("allreduce_rmsnorm_fp8", &options, &compiled), COLLC_OK) << lastError();
  int naux = 0;
  ASSERT_EQ(collc_compiled_info(compiled, nullptr, nullptr, nullptr, &naux), COLLC_OK);
  ASSERT_EQ(naux, 4);
  collc_element_type type = COLLC_ELEMENT_F16;
  ASSERT_EQ(collc_compiled_buffer_type(compiled, -1, &type), COLLC_OK);
  EXPECT_EQ(type, COLLC_ELEMENT_FP8E4M3);
  const collc_element_type aux[] = {COLLC_ELEMENT_BF16, COLLC_ELEMENT_BF16, COLLC_ELEMENT_BF16,
                                    COLLC_ELEMENT_F32};
  for (int k = 0; k < naux; ++k) {
    ASSERT_EQ(collc_compiled_buffer_type(compiled, k, &type), COLLC_OK);
    EXPECT_EQ(type, aux[k]) << k;
  }
  EXPECT_EQ(collc_compiled_in_place(compiled), 0);
  EXPECT_EQ(collc_compiled_buffer_type(compiled, 4, &type), COLLC_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("buffer 4 is neither the output (-1) nor one of the 4 aux buffers"),
            std::string::npos)
      << lastError();
  EXPECT_EQ(collc_compiled_buffer_type(nullptr, -1, &type), COLLC_INVALID_ARGUMENT);
  EXPECT_EQ(collc_compiled_destroy(compiled), COLLC_OK);
}

// Each aux buffer's elements for a call: residual and residual_out n, the weight one row, the
// static scale one; an index out of range is refused.
TEST(CApi, SaysTheElementsOfEveryAuxBuffer) {
  collc_compile_options options;
  ASSERT_EQ(collc_compile_options_init(&options), COLLC_OK);
  options.dtype = COLLC_BF16;
  options.row_length = 1024;
  collc_compiled* compiled = nullptr;
  ASSERT_EQ(collc_compile("allreduce_rmsnorm_fp8", &options, &compiled), COLLC_OK) << lastError();
  const uint64_t expected[] = {7 * 1024, 7 * 1024, 1024, 1};
  for (int k = 0; k < 4; ++k) {
    uint64_t elements = 0;
    ASSERT_EQ(collc_compiled_aux_count(compiled, k, 7 * 1024, &elements), COLLC_OK) << lastError();
    EXPECT_EQ(elements, expected[k]) << k;
  }
  uint64_t elements = 0;
  EXPECT_EQ(collc_compiled_aux_count(compiled, 4, 1024, &elements), COLLC_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("buffer 4 is not one of the 4 aux buffers"), std::string::npos)
      << lastError();
  EXPECT_EQ(collc_compiled_aux_count(compiled, 0, uint64_t(1) << 63, &elements),
            COLLC_INVALID_ARGUMENT);
  EXPECT_EQ(collc_compiled_aux_count(nullptr, 0, 1, &elements), COLLC_INVALID_ARGUMENT);
  EXPECT_EQ(collc_compiled_destroy(compiled), COLLC_OK);
}

TEST(CApi, CompilesByNameWithTheOptionsGiven) {
  collc_compile_options options;
  ASSERT_EQ(collc_compile_options_init(&options), COLLC_OK);
  options.nranks = 2;
  options.sync = COLLC_SYNC_LL;
  options.blocks = 4;
  options.threads = 256;
  collc_compiled* compiled = nullptr;
  ASSERT_EQ(collc_compile("allgather_direct", &options, &compiled), COLLC_OK) << lastError();
  collc_collective kind = COLLC_ALLREDUCE;
  ASSERT_EQ(collc_compiled_info(compiled, &kind, nullptr, nullptr, nullptr), COLLC_OK);
  EXPECT_EQ(kind, COLLC_ALLGATHER);
  uint64_t in = 0, out = 0;
  ASSERT_EQ(collc_compiled_buffer_counts(compiled, 10, &in, &out), COLLC_OK);
  EXPECT_EQ(in, 10u);
  EXPECT_EQ(out, 20u); // every rank's 10 elements
  const std::string source = collc_compiled_cuda_source(compiled);
  EXPECT_NE(source.find("256"), std::string::npos);
  EXPECT_EQ(collc_compiled_destroy(compiled), COLLC_OK);
}

// A count whose sizes do not fit in 63 bits is refused, never answered with a wrapped size.
TEST(CApi, CountsWhoseSizesDoNotFitAreRefused) {
  collc_compile_options options;
  ASSERT_EQ(collc_compile_options_init(&options), COLLC_OK);
  options.nranks = 8;
  collc_compiled* compiled = nullptr;
  ASSERT_EQ(collc_compile("allgather_direct", &options, &compiled), COLLC_OK) << lastError();
  uint64_t in = 0, out = 0, heap = 0;
  const uint64_t huge = uint64_t(1) << 61; // 2^63 bytes of f32 in, 2^64 elements out
  EXPECT_EQ(collc_compiled_buffer_counts(compiled, huge, &in, &out), COLLC_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("more than 2^63 - 1 elements"), std::string::npos) << lastError();
  EXPECT_EQ(collc_compiled_heap_bytes(compiled, huge, &heap), COLLC_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("more than 2^63 - 1 bytes for the input"), std::string::npos)
      << lastError();
  EXPECT_EQ(collc_compiled_heap_bytes(compiled, uint64_t(1) << 20, &heap), COLLC_OK);
  EXPECT_EQ(collc_compiled_destroy(compiled), COLLC_OK);
}

TEST(CApi, LastErrorIsPerThreadAndKeptBySuccessfulCalls) {
  ASSERT_EQ(collc_world_nranks(nullptr, nullptr), COLLC_INVALID_ARGUMENT);
  const std::string mine = lastError();
  ASSERT_NE(mine.find("collc_world_nranks"), std::string::npos) << mine;

  std::string otherBefore, otherAfter;
  std::thread other([&] {
    otherBefore = collc_last_error();
    (void)collc_compiled_info(nullptr, nullptr, nullptr, nullptr, nullptr);
    otherAfter = collc_last_error();
  });
  other.join();
  EXPECT_EQ(otherBefore, "") << "a fresh thread sees another thread's error";
  EXPECT_NE(otherAfter.find("collc_compiled_info"), std::string::npos) << otherAfter;
  EXPECT_EQ(lastError(), mine) << "another thread's error replaced this one's";

  collc_compile_options options;
  ASSERT_EQ(collc_compile_options_init(&options), COLLC_OK);
  EXPECT_EQ(lastError(), mine);
}

// A bundle written from a compiled variant loads through the C API alone (libcollc.so); its
// description is the variant's. The cubin here is a stand-in: only a GPU runs one.
TEST(CApi, LoadsABundleWithoutTheCompiler) {
  collc_compile_options options;
  ASSERT_EQ(collc_compile_options_init(&options), COLLC_OK);
  options.nranks = 4;
  options.dtype = COLLC_BF16;
  collc_compiled* compiled = nullptr;
  ASSERT_EQ(collc_compile("allreduce_twoshot", &options, &compiled), COLLC_OK) << lastError();
  collc::CollectiveBundle bundle;
  bundle.compiled = compiled->compiled;
  bundle.cubins = {{"sm_90", std::string("stand-in cubin\0with a zero", 27)}};
  const std::string path = testing::TempDir() + "capi_twoshot.collb";
  ASSERT_FALSE(collc::writeBundle(path, bundle));

  collc_compiled* loaded = nullptr;
  ASSERT_EQ(collc_compiled_load_bundle(path.c_str(), &loaded), COLLC_OK) << lastError();
  collc_collective kind;
  collc_dtype dtype;
  int nranks = 0, naux = -1;
  ASSERT_EQ(collc_compiled_info(loaded, &kind, &dtype, &nranks, &naux), COLLC_OK);
  EXPECT_EQ(kind, COLLC_ALLREDUCE);
  EXPECT_EQ(dtype, COLLC_BF16);
  EXPECT_EQ(nranks, 4);
  EXPECT_EQ(naux, 0);
  EXPECT_EQ(collc_compiled_in_place(loaded), collc_compiled_in_place(compiled));
  EXPECT_STREQ(collc_compiled_kernel_name(loaded), collc_compiled_kernel_name(compiled));
  ASSERT_TRUE(loaded->bundle);
  EXPECT_EQ(*loaded->bundle->cubinFor("sm_90"), bundle.cubins[0].image);
  EXPECT_EQ(collc_compiled_destroy(loaded), COLLC_OK);
  EXPECT_EQ(collc_compiled_destroy(compiled), COLLC_OK);

  // A file that is not a bundle, a missing one, and null arguments: statuses and messages.
  const std::string junk = testing::TempDir() + "capi_junk.collb";
  std::ofstream(junk) << "collective x kind allreduce";
  EXPECT_EQ(collc_compiled_load_bundle(junk.c_str(), &loaded), COLLC_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("capi_junk.collb"), std::string::npos) << lastError();
  EXPECT_EQ(loaded, nullptr);
  EXPECT_EQ(collc_compiled_load_bundle((junk + ".missing").c_str(), &loaded),
            COLLC_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find(".missing"), std::string::npos) << lastError();
  EXPECT_EQ(collc_compiled_load_bundle(nullptr, &loaded), COLLC_INVALID_ARGUMENT);
  EXPECT_EQ(collc_compiled_load_bundle(path.c_str(), nullptr), COLLC_INVALID_ARGUMENT);
}

TEST(CApi, InitSetsTheStructSizeOfThisHeader) {
  collc_compile_options compile;
  std::memset(&compile, 0xAB, sizeof compile);
  ASSERT_EQ(collc_compile_options_init(&compile), COLLC_OK);
  EXPECT_EQ(compile.struct_size, sizeof(collc_compile_options));
  EXPECT_EQ(compile.nranks, 2);
  collc_dispatch_options dispatch;
  std::memset(&dispatch, 0xAB, sizeof dispatch);
  ASSERT_EQ(collc_dispatch_options_init(&dispatch), COLLC_OK);
  EXPECT_EQ(dispatch.struct_size, sizeof(collc_dispatch_options));
  EXPECT_EQ(dispatch.table, nullptr);
}

TEST(CApi, StructSizesTheLibraryDoesNotKnowAreRefusedWithWhatToDo) {
  collc_compile_options options;
  ASSERT_EQ(collc_compile_options_init(&options), COLLC_OK);
  collc_compiled* compiled = nullptr;
  // Too small (or never filled in): an argument error that says to call the _init function.
  options.struct_size = 4;
  EXPECT_EQ(collc_compile("allreduce_oneshot", &options, &compiled), COLLC_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("collc_compile: the collc_compile_options struct's struct_size is 4 "
                             "bytes"),
            std::string::npos)
      << lastError();
  EXPECT_NE(lastError().find("_init function"), std::string::npos) << lastError();
  EXPECT_EQ(compiled, nullptr);
  // Larger than this library's: a newer header than the library.
  options.struct_size = sizeof(collc_compile_options) + 8;
  EXPECT_EQ(collc_compile_text("x.coll", "collective x", &options, &compiled), COLLC_UNSUPPORTED);
  EXPECT_NE(lastError().find("newer collc.h"), std::string::npos) << lastError();
  EXPECT_EQ(compiled, nullptr);

  // _init_sized writes nothing for a size it does not know.
  collc_compile_options untouched;
  std::memset(&untouched, 0x5A, sizeof untouched);
  const collc_compile_options before = untouched;
  EXPECT_EQ(collc_compile_options_init_sized(&untouched, 3), COLLC_INVALID_ARGUMENT);
  EXPECT_EQ(collc_compile_options_init_sized(&untouched, sizeof untouched + 16), COLLC_UNSUPPORTED);
  EXPECT_EQ(std::memcmp(&before, &untouched, sizeof untouched), 0);

  // The dispatcher reads its options' size before it looks at the world (none here).
  collc_dispatch_options dispatch;
  ASSERT_EQ(collc_dispatch_options_init(&dispatch), COLLC_OK);
  dispatch.max_count = 1024;
  dispatch.struct_size = 1;
  collc_dispatcher* dispatcher = nullptr;
  EXPECT_EQ(collc_dispatcher_create(nullptr, &dispatch, &dispatcher), COLLC_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("collc_dispatch_options struct's struct_size is 1 bytes"),
            std::string::npos)
      << lastError();
  EXPECT_EQ(collc_dispatch_options_init_sized(&dispatch, 2), COLLC_INVALID_ARGUMENT);
  EXPECT_EQ(dispatcher, nullptr);
}

// What the generated source says of its launch shape (clang-format aligns the comments after).
bool sourceSays(const collc_compiled* compiled, const std::string& text) {
  return std::string(collc_compiled_cuda_source(compiled)).find(text) != std::string::npos;
}

TEST(CApi, CompilesWithTheVectorUnrollAndWholeStoresGiven) {
  collc_compile_options options;
  ASSERT_EQ(collc_compile_options_init(&options), COLLC_OK);
  EXPECT_EQ(options.vector_bytes, 0);
  EXPECT_EQ(options.unroll, 0);
  EXPECT_EQ(options.whole_stores, -1);
  collc_compiled* compiled = nullptr;
  ASSERT_EQ(collc_compile("allreduce_oneshot", &options, &compiled), COLLC_OK) << lastError();
  // The spec's launch: 16-byte vectors of f32, no unrolling, no whole stores.
  EXPECT_TRUE(sourceSays(compiled, "kVec = 4;"));
  EXPECT_TRUE(sourceSays(compiled, "kWholeStores = false;"));
  EXPECT_FALSE(sourceSays(compiled, "unroll 2"));
  ASSERT_EQ(collc_compiled_destroy(compiled), COLLC_OK);

  options.vector_bytes = 4;
  options.unroll = 2;
  options.whole_stores = 1;
  ASSERT_EQ(collc_compile("allreduce_oneshot", &options, &compiled), COLLC_OK) << lastError();
  EXPECT_TRUE(sourceSays(compiled, "kVec = 1;"));
  EXPECT_TRUE(sourceSays(compiled, "kWholeStores = true;"));
  EXPECT_TRUE(sourceSays(compiled, "unroll 2: 2 vectors per thread per iteration"));
  ASSERT_EQ(collc_compiled_destroy(compiled), COLLC_OK);
}

TEST(CApi, LaunchShapesOutOfRangeAreRefused) {
  collc_compile_options options;
  collc_compiled* compiled = nullptr;
  ASSERT_EQ(collc_compile_options_init(&options), COLLC_OK);
  options.whole_stores = 2;
  EXPECT_EQ(collc_compile("allreduce_oneshot", &options, &compiled), COLLC_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("whole_stores 2"), std::string::npos) << lastError();
  ASSERT_EQ(collc_compile_options_init(&options), COLLC_OK);
  options.unroll = -1;
  EXPECT_EQ(collc_compile("allreduce_oneshot", &options, &compiled), COLLC_INVALID_ARGUMENT);
  // A C int, but no width the spec can take: the compiler says so at the spec's place.
  ASSERT_EQ(collc_compile_options_init(&options), COLLC_OK);
  options.vector_bytes = 3;
  EXPECT_EQ(collc_compile("allreduce_oneshot", &options, &compiled), COLLC_SPEC_ERROR);
  EXPECT_NE(lastError().find("allreduce_oneshot.coll:4:1: error: vector = 3 is invalid"),
            std::string::npos)
      << lastError();
  EXPECT_EQ(compiled, nullptr);
}

TEST(CApi, AnOlderOptionsStructReadsTheFieldsItLacksAsDefaults) {
  // The first layout with struct_size ended before vector_bytes (fields are only appended).
  const size_t olderSize = offsetof(collc_compile_options, vector_bytes);
  collc_compile_options options;
  std::memset(&options, 0x5A, sizeof options);
  ASSERT_EQ(collc_compile_options_init_sized(&options, olderSize), COLLC_OK) << lastError();
  EXPECT_EQ(options.struct_size, olderSize);
  EXPECT_EQ(options.nranks, 2);
  // Nothing past the older struct was written: an older program's struct ends there.
  const unsigned char* bytes = reinterpret_cast<const unsigned char*>(&options);
  for (size_t i = olderSize; i < sizeof options; ++i)
    ASSERT_EQ(bytes[i], 0x5A) << "byte " << i;
  // What lies past it is not read: the spec's launch shape, not 0x5A5A5A5A bytes per vector.
  collc_compiled* compiled = nullptr;
  ASSERT_EQ(collc_compile("allreduce_oneshot", &options, &compiled), COLLC_OK) << lastError();
  EXPECT_TRUE(sourceSays(compiled, "kVec = 4;"));
  EXPECT_TRUE(sourceSays(compiled, "kWholeStores = false;"));
  ASSERT_EQ(collc_compiled_destroy(compiled), COLLC_OK);
  // A size between the two layouts is neither.
  options.struct_size = olderSize + sizeof(int);
  EXPECT_EQ(collc_compile("allreduce_oneshot", &options, &compiled), COLLC_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("has " + std::to_string(olderSize) + ", " +
                             std::to_string(offsetof(collc_compile_options, work_limit)) + " or " +
                             std::to_string(sizeof options)),
            std::string::npos)
      << lastError();
}

TEST(CApi, WorkLimitBoundsTheProofsAndTheLayoutBeforeItKeepsTheDefault) {
  collc_compile_options options;
  ASSERT_EQ(collc_compile_options_init(&options), COLLC_OK) << lastError();
  EXPECT_EQ(options.work_limit, 0);
  collc_compiled* compiled = nullptr;
  options.nranks = 8;
  options.work_limit = 1024; // less than the one-shot's proof at 8 ranks takes: refused, saying so
  EXPECT_EQ(collc_compile("allreduce_oneshot", &options, &compiled), COLLC_SPEC_ERROR);
  EXPECT_NE(lastError().find("takes more than 1024 steps of work"), std::string::npos)
      << lastError();
  EXPECT_EQ(compiled, nullptr);
  options.work_limit = -1;
  EXPECT_EQ(collc_compile("allreduce_oneshot", &options, &compiled), COLLC_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("work_limit -1 is negative"), std::string::npos) << lastError();
  // A program built before work_limit: its struct ends there, and the default holds. What lies
  // past it (bytes of 0xA5: a negative work_limit, refused if it were read) is not read.
  const size_t beforeWorkLimit = offsetof(collc_compile_options, work_limit);
  std::memset(&options, 0xA5, sizeof options);
  ASSERT_EQ(collc_compile_options_init_sized(&options, beforeWorkLimit), COLLC_OK) << lastError();
  ASSERT_EQ(collc_compile("allreduce_oneshot", &options, &compiled), COLLC_OK) << lastError();
  ASSERT_EQ(collc_compiled_destroy(compiled), COLLC_OK);
}

/// Every NAME=value of this process's environment, sorted.
std::vector<std::string> environmentNow() {
  std::vector<std::string> variables;
  for (char** e = environ; e && *e; ++e)
    variables.emplace_back(*e);
  std::sort(variables.begin(), variables.end());
  return variables;
}

TEST(CApi, CallsLeaveTheEnvironmentAsTheyFoundIt) {
  // The environment is the host program's: no call sets, changes or removes a variable, whatever
  // it succeeds or fails at (a world on one GPU once set CUDA_DEVICE_MAX_CONNECTIONS).
  const std::vector<std::string> before = environmentNow();
  int count = 0;
  (void)collc_device_count(&count);
  collc_world* world = nullptr;
  if (collc_world_create_shared_gpu(0, 4, 1 << 20, &world) == COLLC_OK) {
    EXPECT_EQ(collc_world_destroy(world), COLLC_OK);
  }
  const int devices[2] = {0, 1};
  world = nullptr;
  if (collc_world_create_local(devices, 2, 1 << 20, &world) == COLLC_OK) {
    EXPECT_EQ(collc_world_destroy(world), COLLC_OK);
  }
  EXPECT_EQ(collc_set_nvrtc_library("/nonexistent/libnvrtc.so.97"), COLLC_OK);
  EXPECT_EQ(collc_set_nvrtc_library(nullptr), COLLC_OK);
  collc_compiled* compiled = nullptr;
  ASSERT_EQ(collc_compile("allreduce_oneshot", nullptr, &compiled), COLLC_OK) << lastError();
  EXPECT_EQ(collc_compiled_destroy(compiled), COLLC_OK);
  EXPECT_EQ(collc_compile_text("x.coll", "collective", nullptr, &compiled), COLLC_SPEC_ERROR);
  EXPECT_EQ(collc_compiled_load_bundle("/nonexistent/x.collb", &compiled), COLLC_INVALID_ARGUMENT);
  collc_dispatch_options dispatch;
  ASSERT_EQ(collc_dispatch_options_init(&dispatch), COLLC_OK);
  collc_dispatcher* dispatcher = nullptr;
  EXPECT_NE(collc_dispatcher_create(nullptr, &dispatch, &dispatcher), COLLC_OK);
  EXPECT_EQ(environmentNow(), before);
}

TEST(CApi, FewerWorkQueuesThanRanksOnOneGpuAreRefused) {
  // The program's own setting (a test may set its environment; the library only reads it).
  const char* old = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS");
  const std::string saved = old ? old : "";
  ASSERT_EQ(setenv("CUDA_DEVICE_MAX_CONNECTIONS", "2", 1), 0);
  collc_world* world = nullptr;
  EXPECT_EQ(collc_world_create_shared_gpu(0, 4, 1 << 20, &world), COLLC_UNSUPPORTED);
  EXPECT_NE(lastError().find("collc_world_create_shared_gpu: CUDA_DEVICE_MAX_CONNECTIONS=2 gives "
                             "the streams of 4 ranks 2 hardware work queues"),
            std::string::npos)
      << lastError();
  EXPECT_EQ(world, nullptr);
  EXPECT_STREQ(std::getenv("CUDA_DEVICE_MAX_CONNECTIONS"), "2");
  if (old)
    setenv("CUDA_DEVICE_MAX_CONNECTIONS", saved.c_str(), 1);
  else
    unsetenv("CUDA_DEVICE_MAX_CONNECTIONS");
}

TEST(CApi, VersionMacrosAreTheLibrarysVersion) {
  EXPECT_EQ(COLLC_VERSION,
            COLLC_VERSION_MAJOR * 10000 + COLLC_VERSION_MINOR * 100 + COLLC_VERSION_PATCH);
  EXPECT_EQ(std::to_string(COLLC_VERSION_MAJOR) + "." + std::to_string(COLLC_VERSION_MINOR) + "." +
                std::to_string(COLLC_VERSION_PATCH),
            COLLC_VERSION_STRING);
  EXPECT_STREQ(collc_version(), COLLC_VERSION_STRING);
}

TEST(CApi, VersionAndStatusNames) {
  EXPECT_TRUE(
      std::regex_match(std::string(collc_version()), std::regex("[0-9]+\\.[0-9]+\\.[0-9]+")))
      << collc_version();
  EXPECT_STREQ(collc_status_name(COLLC_OK), "COLLC_OK");
  EXPECT_STREQ(collc_status_name(COLLC_SPEC_ERROR), "COLLC_SPEC_ERROR");
  EXPECT_STREQ(collc_status_name(COLLC_INTERNAL), "COLLC_INTERNAL");
  EXPECT_STREQ(collc_status_name(static_cast<collc_status>(42)), "unknown status");
}

// Python's table of strategies is made from collc_sync_name (python/collc/_capi.py): it counts
// 1, 2, ... up to the first null, so the registered C values must be exactly those.
TEST(CApi, SyncNamesAreTheRegistrysFromOneUp) {
  EXPECT_EQ(collc_sync_name(COLLC_SYNC_DEFAULT), nullptr);
  int cValue = 1;
  for (const collc::RegisteredSync& entry : collc::kSyncRegistry) {
    EXPECT_EQ(entry.cValue, cValue) << entry.name;
    const char* spelling = collc_sync_name(static_cast<collc_sync>(cValue++));
    ASSERT_NE(spelling, nullptr) << entry.name;
    EXPECT_EQ(std::string_view(spelling), entry.name);
  }
  EXPECT_EQ(collc_sync_name(static_cast<collc_sync>(cValue)), nullptr);
  EXPECT_EQ(collc_sync_name(static_cast<collc_sync>(-1)), nullptr);
}

} // namespace
