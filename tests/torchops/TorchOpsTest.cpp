// libcollc_torch.so through torch's dispatcher: its kernels match the schemas collc.torch defines
// (torch checks them when the library registers), every op has a CUDA and a CPU kernel, and a
// call refused before any launch raises collc.Error's message, word for word as the Python path.
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/empty.h>
#include <dlfcn.h>
#include <fstream>
#include <functional>
#include <gtest/gtest.h>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <torch/library.h>
#include <vector>

namespace {

/// The schemas python/collc/torch.py defines: each _LIB.define("...") call's string literals.
std::vector<std::string> pythonSchemas() {
  std::ifstream file(COLLC_TORCH_PY);
  std::stringstream text;
  text << file.rdbuf();
  const std::string source = text.str();
  std::vector<std::string> schemas;
  const std::string call = "_LIB.define(";
  for (size_t at = source.find(call); at != std::string::npos; at = source.find(call, at + 1)) {
    const size_t end = source.find(")\n", source.find('"', at));
    const std::string args = source.substr(at + call.size(), end - at - call.size());
    std::string schema;
    static const std::regex literal("\"([^\"]*)\"");
    for (std::sregex_iterator it(args.begin(), args.end(), literal), last; it != last; ++it)
      schema += (*it)[1].str();
    schemas.push_back(schema);
  }
  return schemas;
}

class TorchOps : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    schemas_ = new std::vector<std::string>(pythonSchemas());
    library_ = new torch::Library(torch::Library::DEF, "collc", std::nullopt, __FILE__, __LINE__);
    for (const std::string& schema : *schemas_)
      library_->def(schema.c_str());
    // As collc.torch does: the schemas first, then the library, whose kernels torch checks
    // against them as they register.
    handle_ = dlopen(COLLC_TORCH_OPS_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << dlerror();
    using RegisterKernels = int (*)(char*, size_t);
    auto registerKernels =
        reinterpret_cast<RegisterKernels>(dlsym(handle_, "collc_torch_ops_register_kernels"));
    ASSERT_NE(registerKernels, nullptr);
    char why[4096] = {0};
    ASSERT_EQ(registerKernels(why, sizeof why), 0) << why;
    using Register = void (*)(int64_t, int, int, int, uint64_t);
    auto reg = reinterpret_cast<Register>(dlsym(handle_, "collc_torch_ops_register"));
    ASSERT_NE(reg, nullptr);
    reg(kHandle, /*rank=*/0, /*nranks=*/2, /*device=*/0, /*max_bytes=*/4096);
  }

  static c10::OperatorHandle op(const char* name) {
    return c10::Dispatcher::singleton().findSchemaOrThrow((std::string("collc::") + name).c_str(),
                                                          "");
  }

  /// The message the call raised (without torch's backtrace); "" if it raised nothing.
  static std::string raised(const std::function<void()>& call) {
    try {
      call();
    } catch (const c10::Error& error) {
      return error.what_without_backtrace();
    }
    return "";
  }

  static constexpr int64_t kHandle = 7;
  static inline std::vector<std::string>* schemas_ = nullptr;
  static inline torch::Library* library_ = nullptr;
  static inline void* handle_ = nullptr;
};

TEST_F(TorchOps, EveryOpHasACudaAndACpuKernel) {
  ASSERT_EQ(schemas_->size(), 11u) << "torch.py defines 11 ops";
  for (const char* name : {"all_reduce", "all_reduce_", "all_gather", "reduce_scatter", "broadcast",
                           "reduce", "all_to_all", "fused_add_rms_norm"}) {
    EXPECT_TRUE(op(name).hasKernelForDispatchKey(c10::DispatchKey::CUDA)) << name;
    EXPECT_TRUE(op(name).hasKernelForDispatchKey(c10::DispatchKey::CPU)) << name;
  }
  // The quantized ops run on the Python path on both host paths (docs/python.md): this library
  // gives them no kernel.
  for (const char* name : {"fused_add_rms_norm_fp8", "fused_add_rms_norm_fp8_per_token",
                           "fused_add_rms_norm_nvfp4"})
    EXPECT_FALSE(op(name).hasKernelForDispatchKey(c10::DispatchKey::CUDA)) << name;
}

TEST_F(TorchOps, ACpuTensorIsRefusedWithThePythonPathsWords) {
  at::Tensor x = at::empty({64}, at::kFloat);
  auto allReduce =
      op("all_reduce").typed<at::Tensor(const at::Tensor&, int64_t, c10::string_view)>();
  EXPECT_EQ(raised([&] { allReduce.call(x, kHandle, "sum"); }),
            "collc.Error(COLLC_INVALID_ARGUMENT): collc cannot take this tensor for allreduce: "
            "a tensor on cpu; this communicator runs on cuda:0 (fall back to NCCL; should_use() "
            "tells beforehand)");
  auto allToAll = op("all_to_all").typed<at::Tensor(const at::Tensor&, int64_t)>();
  EXPECT_NE(raised([&] { allToAll.call(x, kHandle); }).find("for alltoall: a tensor on cpu"),
            std::string::npos);
}

TEST_F(TorchOps, TheOpAndTheRootAreCheckedFirst) {
  at::Tensor x = at::empty({64}, at::kFloat);
  auto allReduceInPlace =
      op("all_reduce_").typed<void(const at::Tensor&, int64_t, c10::string_view)>();
  EXPECT_EQ(raised([&] { allReduceInPlace.call(x, kHandle, "prod"); }),
            "collc.Error(COLLC_INVALID_ARGUMENT): unknown op 'prod': use 'sum', 'max' or 'min'");
  auto broadcast = op("broadcast").typed<at::Tensor(const at::Tensor&, int64_t, int64_t)>();
  EXPECT_EQ(raised([&] { broadcast.call(x, kHandle, 2); }),
            "collc.Error(COLLC_INVALID_ARGUMENT): root 2: a rank of 0..1");
}

TEST_F(TorchOps, AnUnknownCommunicatorIsNamed) {
  at::Tensor x = at::empty({64}, at::kFloat);
  auto allGather = op("all_gather").typed<at::Tensor(const at::Tensor&, int64_t)>();
  EXPECT_EQ(raised([&] { allGather.call(x, 99); }),
            "collc.Error(COLLC_INVALID_ARGUMENT): no live collc communicator 99");
}

} // namespace
