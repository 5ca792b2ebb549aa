// The registry of device backends, and the helpers every kind's halves use
// (typed buffer descriptors, locating a runtime's error).
#include "backend/runtime/DeviceBackend.h"
#include "stdlib/Registry.h"

#include <cstdio>
#include <deque>

namespace mdl::backend {

namespace {
struct Registered {
  std::string name;
  std::unique_ptr<DeviceBackend> backend;
};
std::deque<Registered> &backends() {
  static std::deque<Registered> b;
  return b;
}
static_assert(int(ir::DType::F64) == MDL_F64 && int(ir::DType::Bool) == MDL_BOOL &&
                  int(ir::DType::BF16) == MDL_BF16,
              "mdl_dtype follows ir::DType");
} // namespace

bool registerDeviceBackend(std::unique_ptr<DeviceBackend> backend) {
  DeviceBackend *b = backend.get();
  stdlib::DeviceKindInfo info = b->descriptor();
  // The compiler asks the compile-time half, never a central table.
  info.supports = [b](ir::OpKind k) { return b->supports(k); };
  std::string name = info.name;
  if (!stdlib::registerDeviceKind(std::move(info)))
    return false;
  backends().push_back({name, std::move(backend)});
  return true;
}

DeviceBackend *deviceBackend(const std::string &name) {
  for (Registered &r : backends())
    if (r.name == name)
      return r.backend.get();
  return nullptr;
}

void BufferList::add(void *data, const ir::TensorType &type) {
  shapes.push_back(type.sizes());
  mdl_buffer b;
  b.data = data;
  b.dtype = abiDType(type.dtype);
  b.rank = type.rank();
  b.shape = nullptr;
  b.strides = nullptr;
  buffers.push_back(b);
  // Shapes may move while the list grows: point at them at the end.
  for (size_t i = 0; i < buffers.size(); ++i)
    buffers[i].shape = shapes[i].data();
}

mdl_dtype abiDType(ir::DType t) { return static_cast<mdl_dtype>(static_cast<int>(t)); }
ir::DType dtypeOfAbi(int32_t code) { return static_cast<ir::DType>(code); }

ir::TensorType bufferType(const mdl_buffer &b) {
  return ir::TensorType::of(dtypeOfAbi(b.dtype), std::vector<int64_t>(b.shape, b.shape + b.rank));
}

Tensor hostTensor(const mdl_buffer &b, const void *data) {
  ir::TensorType t = bufferType(b);
  size_t bytes = size_t(t.byteSize());
  return Tensor(std::move(t), std::make_shared<Buffer>(const_cast<void *>(data), bytes, nullptr));
}

ir::Location deviceErrorLocation(const std::string &msg, const ir::Location &fallback,
                                 std::string &rest) {
  unsigned line = 0, col = 0;
  int used = 0;
  if (std::sscanf(msg.c_str(), "%u:%u: %n", &line, &col, &used) == 2 && used > 0) {
    rest = msg.substr(size_t(used));
    ir::Location l = fallback;
    l.line = line;
    l.col = col;
    l.len = 1;
    return l;
  }
  rest = msg;
  return fallback;
}

} // namespace mdl::backend
