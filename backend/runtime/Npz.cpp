// NumPy .npz archives: a zip of .npy files (np.savez stores them,
// np.savez_compressed deflates them), read through libzip.
//
// An array is named by its member without `.npy` (`np.savez(f, w=a)` makes
// `w.npy`). Unlike .npy and safetensors files, a member is read into memory:
// a deflated member has no bytes to map. The member's .npy bytes are parsed
// by the same code as a .npy file.
#include "backend/runtime/FileIO.h"
#include "backend/runtime/WeightFormats.h"

#include <zip.h>

#include <algorithm>
#include <memory>
#include <vector>

namespace mdl::backend::formats {

namespace {

struct ZipCloser {
  void operator()(zip_t *z) const { zip_discard(z); }
};
struct ZipFileCloser {
  void operator()(zip_file_t *f) const { zip_fclose(f); }
};
using Archive = std::unique_ptr<zip_t, ZipCloser>;

llvm::Expected<Archive> openArchive(const std::string &path) {
  int code = 0;
  zip_t *z = zip_open(path.c_str(), ZIP_RDONLY, &code);
  if (!z) {
    zip_error_t err;
    zip_error_init_with_code(&err, code);
    std::string why = zip_error_strerror(&err);
    zip_error_fini(&err);
    return fileio::error(path, code == ZIP_ER_NOZIP
                                   ? "not a .npz file (not a zip archive)"
                                   : "cannot open the .npz archive: " + why);
  }
  return Archive(z);
}

/// The arrays of the archive: its members that end in .npy, without it.
std::vector<std::string> arrayNames(zip_t *z) {
  std::vector<std::string> names;
  zip_int64_t n = zip_get_num_entries(z, 0);
  for (zip_int64_t i = 0; i < n; ++i) {
    const char *name = zip_get_name(z, zip_uint64_t(i), 0);
    std::string s = name ? name : "";
    if (s.size() > 4 && s.compare(s.size() - 4, 4, ".npy") == 0)
      names.push_back(s.substr(0, s.size() - 4));
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string listOf(const std::vector<std::string> &names) {
  if (names.empty())
    return "the archive holds no arrays";
  std::string list;
  for (size_t i = 0; i < names.size() && i < 20; ++i)
    list += (i ? ", " : "") + names[i];
  return "arrays: " + list + (names.size() > 20 ? ", ..." : "");
}

/// The member of `key` (the only array when `key` is empty) and its size.
llvm::Expected<std::string> memberOf(const std::string &path, zip_t *z, const std::string &key,
                                     zip_uint64_t &size) {
  std::vector<std::string> names = arrayNames(z);
  std::string name = key;
  if (key.empty()) {
    if (names.size() != 1)
      return fileio::error(path, "a .npz archive of " + std::to_string(names.size()) +
                                     " arrays needs a key to say which one: load(\"" + path +
                                     "\", \"KEY\") for a weight; an input archive must hold "
                                     "one array (" + listOf(names) + ")");
    name = names[0];
  } else if (std::find(names.begin(), names.end(), key) == names.end()) {
    return fileio::error(path, "no array '" + key + "' in the .npz archive (" + listOf(names) +
                                   ")");
  }
  std::string member = name + ".npy";
  zip_stat_t st;
  zip_stat_init(&st);
  if (zip_stat(z, member.c_str(), 0, &st) != 0 || !(st.valid & ZIP_STAT_SIZE))
    return fileio::error(path, "cannot read the member " + member + ": " + zip_strerror(z));
  size = st.size;
  return member;
}

/// Up to `limit` bytes of a member, from its start.
llvm::Error readMember(const std::string &path, zip_t *z, const std::string &member,
                       uint8_t *out, zip_uint64_t limit) {
  std::unique_ptr<zip_file_t, ZipFileCloser> f(zip_fopen(z, member.c_str(), 0));
  if (!f)
    return fileio::error(path, "cannot read the member " + member + ": " + zip_strerror(z));
  zip_uint64_t done = 0;
  while (done < limit) {
    zip_int64_t n = zip_fread(f.get(), out + done, limit - done);
    if (n < 0)
      return fileio::error(path, "cannot read the member " + member + ": " +
                                     zip_file_strerror(f.get()));
    if (n == 0)
      break;
    done += zip_uint64_t(n);
  }
  if (done < limit)
    return fileio::error(path, "the member " + member + " is truncated");
  return llvm::Error::success();
}

/// An archive opened at the member of `key`.
struct Member {
  Archive archive;
  std::string name;
  zip_uint64_t size = 0;
};

llvm::Error openMember(const std::string &path, const std::string &key, Member &m) {
  auto z = openArchive(path);
  if (!z)
    return z.takeError();
  m.archive = std::move(*z);
  auto member = memberOf(path, m.archive.get(), key, m.size);
  if (!member)
    return member.takeError();
  m.name = *member;
  return llvm::Error::success();
}

} // namespace

llvm::Expected<ir::TensorType> npzArrayType(const std::string &path, const std::string &key) {
  Member m;
  if (llvm::Error e = openMember(path, key, m))
    return e;
  auto &z = m.archive;
  auto &member = m.name;
  zip_uint64_t size = m.size;
  // A .npy header is at most a few kilobytes; the data is not read.
  std::vector<uint8_t> head(std::min<zip_uint64_t>(size, 1 << 16));
  if (llvm::Error e = readMember(path, z.get(), member, head.data(), head.size()))
    return e;
  auto h = parseNpy(path + ":" + member, head.data(), head.size(), false);
  if (!h)
    return h.takeError();
  return h->type;
}

llvm::Expected<Tensor> readNpzArray(const std::string &path, const std::string &key) {
  Member m;
  if (llvm::Error e = openMember(path, key, m))
    return e;
  auto &z = m.archive;
  auto &member = m.name;
  zip_uint64_t size = m.size;
  std::shared_ptr<Buffer> buf = Buffer::allocate(size_t(std::max<zip_uint64_t>(size, 1)));
  if (!buf)
    return fileio::error(path, "out of memory reading the member " + member + " (" +
                                   std::to_string(size) + " bytes)");
  auto *bytes = static_cast<uint8_t *>(buf->data());
  if (llvm::Error e = readMember(path, z.get(), member, bytes, size))
    return e;
  auto h = parseNpy(path + ":" + member, bytes, size, true);
  if (!h)
    return h.takeError();
  // Tensors view their data in place: the offset must suit the element.
  if (h->dataStart % ir::dtypeSize(h->type.dtype) != 0) {
    Tensor t = Tensor::empty(h->type);
    if (!t.valid())
      return fileio::error(path, "out of memory reading the member " + member);
    std::copy(bytes + h->dataStart, bytes + h->dataStart + t.byteSize(),
              static_cast<uint8_t *>(t.raw()));
    return t;
  }
  return Tensor(h->type, buf, size_t(h->dataStart));
}

} // namespace mdl::backend::formats
