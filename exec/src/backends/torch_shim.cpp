// The C++ side of tier 3 (built only with `--features torch`, by build.rs with the `cc`
// crate against libtorch's headers): what libtorch's C API does not reach.
//
// 1. kc_call_op: calls any operator overload through libtorch's boxed dispatcher
//    (c10::Dispatcher::findSchemaOrThrow + callBoxed) with a stack of tagged values that
//    Rust typed from the op's schema; every tensor the call returns (single, or in a list)
//    comes back as a new owning at::Tensor* (tch's C_tensor). libtorch's own C shim
//    (aoti_torch_call_dispatcher) takes no Scalar and pairs mixed-type returns wrongly, so
//    it cannot serve every op.
// 2. kc_graph_begin / kc_graph_end / kc_graph_free: stream capture through
//    at::cuda::CUDAGraph, so that libtorch knows a capture is under way: its CUDA generator
//    is registered with the graph (dropout and other RNG ops capture; each replay draws
//    from the seed and offset fixed at capture) and ops that allocate inside the capture
//    are served from the graph's private memory pool. kc instantiates and launches the raw
//    graph itself; the CUDAGraph object lives as long as kc's graph (it owns that pool).
//
// Invariant: no C++ exception crosses into Rust; each entry point returns non-zero (or
// null) and writes libtorch's message into the caller's buffer.

#include <ATen/Context.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/ivalue.h>
#include <ATen/core/stack.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/core/Device.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAStream.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace {

enum Tag : int32_t {
  KC_NONE = 0,
  KC_TENSOR = 1,
  KC_UNDEFINED_TENSOR = 2,
  KC_INT = 3,
  KC_DOUBLE = 4,
  KC_BOOL = 5,
  KC_INTS = 6,
  KC_DOUBLES = 7,
  KC_BOOLS = 8,
  KC_TENSORS = 9,
  KC_OPTIONAL_TENSORS = 10,
  KC_STR = 11,
  KC_DEVICE = 12,
  KC_SCALARS = 13,
};

void set_error(char* err, size_t len, const char* msg) {
  if (err == nullptr || len == 0) return;
  std::strncpy(err, msg, len - 1);
  err[len - 1] = '\0';
}

}  // namespace

extern "C" {

// One argument; which fields are read depends on `tag` (ptr/len: an array or a string).
struct KcArg {
  int32_t tag;
  int32_t reserved;
  int64_t i;
  double f;
  const void* ptr;
  uint64_t len;
};

int kc_call_op(const char* name, const char* overload, const KcArg* args, size_t nargs,
               void** outs, size_t max_outs, size_t* n_outs, char* err, size_t err_len) {
  try {
    auto op = c10::Dispatcher::singleton().findSchemaOrThrow(name, overload);
    torch::jit::Stack stack;
    stack.reserve(nargs);
    for (size_t k = 0; k < nargs; ++k) {
      const KcArg& a = args[k];
      switch (a.tag) {
        case KC_NONE:
          stack.emplace_back();
          break;
        case KC_TENSOR:
          stack.emplace_back(*static_cast<const at::Tensor*>(a.ptr));
          break;
        case KC_UNDEFINED_TENSOR:
          stack.emplace_back(at::Tensor());
          break;
        case KC_INT:
          stack.emplace_back(a.i);
          break;
        case KC_DOUBLE:
          stack.emplace_back(a.f);
          break;
        case KC_BOOL:
          stack.emplace_back(a.i != 0);
          break;
        case KC_INTS: {
          auto p = static_cast<const int64_t*>(a.ptr);
          stack.emplace_back(std::vector<int64_t>(p, p + a.len));
          break;
        }
        case KC_DOUBLES: {
          auto p = static_cast<const double*>(a.ptr);
          stack.emplace_back(std::vector<double>(p, p + a.len));
          break;
        }
        case KC_BOOLS: {
          auto p = static_cast<const uint8_t*>(a.ptr);
          c10::List<bool> l;
          for (uint64_t j = 0; j < a.len; ++j) l.push_back(p[j] != 0);
          stack.emplace_back(std::move(l));
          break;
        }
        case KC_TENSORS: {
          auto p = static_cast<const at::Tensor* const*>(a.ptr);
          std::vector<at::Tensor> v;
          v.reserve(a.len);
          for (uint64_t j = 0; j < a.len; ++j) v.push_back(*p[j]);
          stack.emplace_back(std::move(v));
          break;
        }
        case KC_OPTIONAL_TENSORS: {
          auto p = static_cast<const at::Tensor* const*>(a.ptr);
          c10::List<std::optional<at::Tensor>> l;
          // A null entry is an absent one (`None` in a `Tensor?[]`).
          for (uint64_t j = 0; j < a.len; ++j)
            l.push_back(p[j] == nullptr ? std::optional<at::Tensor>()
                                        : std::optional<at::Tensor>(*p[j]));
          stack.emplace_back(std::move(l));
          break;
        }
        case KC_SCALARS: {
          auto p = static_cast<const double*>(a.ptr);
          c10::List<c10::Scalar> l;
          for (uint64_t j = 0; j < a.len; ++j) l.push_back(c10::Scalar(p[j]));
          stack.emplace_back(std::move(l));
          break;
        }
        case KC_STR:
          stack.emplace_back(std::string(static_cast<const char*>(a.ptr), a.len));
          break;
        case KC_DEVICE:
          stack.emplace_back(c10::Device(std::string(static_cast<const char*>(a.ptr), a.len)));
          break;
        default:
          set_error(err, err_len, "kc_call_op: unknown argument tag");
          return 1;
      }
    }
    op.callBoxed(stack);
    size_t n = 0;
    auto push = [&](const at::Tensor& t) {
      if (n < max_outs) outs[n] = new at::Tensor(t);
      ++n;
    };
    for (const auto& v : stack) {
      if (v.isTensor()) {
        push(v.toTensor());
      } else if (v.isTensorList()) {
        for (const at::Tensor& t : v.toTensorList()) push(t);
      }
    }
    *n_outs = n;
    return 0;
  } catch (const std::exception& e) {
    set_error(err, err_len, e.what());
    return 1;
  }
}

void* kc_graph_begin(void* stream, char* err, size_t err_len) {
  try {
    auto s = c10::cuda::getStreamFromExternal(static_cast<cudaStream_t>(stream),
                                              c10::cuda::current_device());
    c10::cuda::setCurrentCUDAStream(s);
    auto* g = new at::cuda::CUDAGraph(/*keep_graph=*/true);
    try {
      g->capture_begin({0, 0}, cudaStreamCaptureModeRelaxed);
    } catch (...) {
      delete g;
      throw;
    }
    return g;
  } catch (const std::exception& e) {
    set_error(err, err_len, e.what());
    return nullptr;
  }
}

int kc_graph_end(void* graph, void* stream, void** raw, char* err, size_t err_len) {
  try {
    auto s = c10::cuda::getStreamFromExternal(static_cast<cudaStream_t>(stream),
                                              c10::cuda::current_device());
    // Capture ends on the stream it began on, whichever stream tier 3 used last.
    c10::cuda::setCurrentCUDAStream(s);
    auto* g = static_cast<at::cuda::CUDAGraph*>(graph);
    try {
      g->capture_end();
    } catch (...) {
      // capture_end throws before it hands the caching allocator back when the capture
      // was invalidated (an op synchronised inside it); the allocator would otherwise keep
      // consulting a filter that points into this graph after kc frees it.
      try {
        c10::cuda::CUDACachingAllocator::endAllocateToPool(c10::cuda::current_device(),
                                                           g->pool());
      } catch (...) {
      }
      throw;
    }
    *raw = g->raw_cuda_graph();
    return 0;
  } catch (const std::exception& e) {
    set_error(err, err_len, e.what());
    return 1;
  }
}

void kc_graph_free(void* graph) {
  try {
    delete static_cast<at::cuda::CUDAGraph*>(graph);
  } catch (...) {
  }
}

// Gives libtorch's cached blocks back to the driver, those of the private pools of freed
// graphs among them. The allocator frees those pools only outside a capture, and an
// allocation that fails inside one does not free them first: a run that captures many
// large graphs one after another must call this between them. Never during a capture.
void kc_empty_cache() {
  try {
    c10::cuda::CUDACachingAllocator::emptyCache();
  } catch (...) {
  }
}

// The model's math modes (its traced kernels show them): TF32 for fp32 matmuls through
// cuBLAS and for fp32 convolutions through cuDNN, as torch.backends.*.allow_tf32 set them.
void kc_set_math(int tf32_cublas, int tf32_cudnn) {
  at::globalContext().setAllowTF32CuBLAS(tf32_cublas != 0);
  at::globalContext().setAllowTF32CuDNN(tf32_cudnn != 0);
}

}  // extern "C"
