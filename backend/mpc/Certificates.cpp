// A test CA and three party certificates through the OpenSSL 3 API
// (Certificates.h).
//
// Every OpenSSL object is held by a unique_ptr with its free function, so
// each early error return releases what was made so far.
#include "backend/mpc/Certificates.h"

#include "backend/mpc/TlsChannel.h"

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <memory>
#include <sys/stat.h>
#include <unistd.h>

namespace mdl::backend::mpc {

namespace {

template <typename T, void (*Free)(T *)> struct Deleter {
  void operator()(T *p) const { Free(p); }
};
using PkeyPtr = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY, EVP_PKEY_free>>;
using X509Ptr = std::unique_ptr<X509, Deleter<X509, X509_free>>;
using ExtPtr = std::unique_ptr<X509_EXTENSION,
                               Deleter<X509_EXTENSION, X509_EXTENSION_free>>;
using BnPtr = std::unique_ptr<BIGNUM, Deleter<BIGNUM, BN_free>>;

llvm::Error fail(const std::string &what) {
  std::string reason;
  if (unsigned long code = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(code, buf, sizeof buf);
    reason = std::string(": ") + buf;
  }
  ERR_clear_error();
  return llvm::createStringError(llvm::inconvertibleErrorCode(), what + reason);
}

llvm::Expected<PkeyPtr> newKey() {
  PkeyPtr key(EVP_EC_gen("P-256"));
  if (!key)
    return fail("cannot generate an ECDSA P-256 key");
  return key;
}

llvm::Error addExtension(X509 *cert, X509 *issuer, int nid, const char *value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  ExtPtr ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value));
  if (!ext || X509_add_ext(cert, ext.get(), -1) != 1)
    return fail(std::string("cannot add certificate extension ") +
                OBJ_nid2sn(nid) + "=" + value);
  return llvm::Error::success();
}

// A certificate for `key` named `commonName`, signed by issuerKey; the CA
// when issuer is null (self-signed).
llvm::Expected<X509Ptr> makeCertificate(EVP_PKEY *key,
                                        const std::string &commonName,
                                        X509 *issuer, EVP_PKEY *issuerKey) {
  X509Ptr cert(X509_new());
  if (!cert || X509_set_version(cert.get(), 2) != 1)
    return fail("cannot create a certificate");
  BnPtr serial(BN_new());
  if (!serial ||
      BN_rand(serial.get(), 64, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) != 1 ||
      !BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(cert.get())))
    return fail("cannot draw a serial number");
  // Valid from an hour ago (clock skew between hosts) for ten years.
  if (!X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600) ||
      !X509_gmtime_adj(X509_getm_notAfter(cert.get()), 10L * 365 * 24 * 3600))
    return fail("cannot set the validity period");
  X509_NAME *name = X509_get_subject_name(cert.get());
  if (X509_NAME_add_entry_by_txt(
          name, "O", MBSTRING_ASC,
          reinterpret_cast<const unsigned char *>("mdl test"), -1, -1,
          0) != 1 ||
      X509_NAME_add_entry_by_txt(
          name, "CN", MBSTRING_ASC,
          reinterpret_cast<const unsigned char *>(commonName.c_str()), -1, -1,
          0) != 1)
    return fail("cannot set the subject name");
  X509 *signer = issuer ? issuer : cert.get();
  if (X509_set_issuer_name(cert.get(), X509_get_subject_name(signer)) != 1 ||
      X509_set_pubkey(cert.get(), key) != 1)
    return fail("cannot set issuer and key");
  bool isCa = issuer == nullptr;
  if (auto err = addExtension(cert.get(), signer, NID_basic_constraints,
                              isCa ? "critical,CA:TRUE" : "critical,CA:FALSE"))
    return err;
  if (auto err = addExtension(cert.get(), signer, NID_key_usage,
                              isCa ? "critical,keyCertSign,cRLSign"
                                   : "critical,digitalSignature"))
    return err;
  if (auto err =
          addExtension(cert.get(), signer, NID_subject_key_identifier, "hash"))
    return err;
  if (!isCa) {
    if (auto err = addExtension(cert.get(), signer,
                                NID_authority_key_identifier, "keyid:always"))
      return err;
    if (auto err = addExtension(cert.get(), signer, NID_ext_key_usage,
                                "serverAuth,clientAuth"))
      return err;
    std::string san = "DNS:" + commonName;
    if (auto err =
            addExtension(cert.get(), signer, NID_subject_alt_name, san.c_str()))
      return err;
  }
  if (X509_sign(cert.get(), issuerKey ? issuerKey : key, EVP_sha256()) <= 0)
    return fail("cannot sign the certificate for " + commonName);
  return cert;
}

llvm::Error writeCertificate(const std::string &path, X509 *cert) {
  FILE *f = std::fopen(path.c_str(), "w");
  if (!f)
    return fail("cannot write " + path + ": " + std::strerror(errno));
  bool ok = PEM_write_X509(f, cert) == 1;
  ok = std::fclose(f) == 0 && ok;
  return ok ? llvm::Error::success() : fail("cannot write " + path);
}

llvm::Error writeKey(const std::string &path, EVP_PKEY *key) {
  // Created with mode 0600 before any key byte is written.
  ::unlink(path.c_str());
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  FILE *f = fd >= 0 ? ::fdopen(fd, "w") : nullptr;
  if (!f) {
    if (fd >= 0)
      ::close(fd);
    return fail("cannot write " + path + ": " + std::strerror(errno));
  }
  bool ok =
      PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr) == 1;
  ok = std::fclose(f) == 0 && ok;
  return ok ? llvm::Error::success() : fail("cannot write " + path);
}

} // namespace

llvm::Error createTestCertificates(const std::string &dir) {
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
    return fail("cannot create directory " + dir + ": " + std::strerror(errno));
  auto caKey = newKey();
  if (!caKey)
    return caKey.takeError();
  auto ca = makeCertificate(caKey->get(), "mdl test CA", nullptr, nullptr);
  if (!ca)
    return ca.takeError();
  if (auto err = writeCertificate(dir + "/ca.pem", ca->get()))
    return err;
  for (int i = 0; i < kNumParties; ++i) {
    auto key = newKey();
    if (!key)
      return key.takeError();
    auto cert = makeCertificate(key->get(), partyCommonName(i), ca->get(),
                                caKey->get());
    if (!cert)
      return cert.takeError();
    std::string base = dir + "/party" + std::to_string(i);
    if (auto err = writeCertificate(base + ".pem", cert->get()))
      return err;
    if (auto err = writeKey(base + ".key", key->get()))
      return err;
  }
  return llvm::Error::success();
}

} // namespace mdl::backend::mpc
