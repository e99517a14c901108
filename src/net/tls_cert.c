/*
 * tls_cert.c — XCCL_TLS_CERT / XCCL_TLS_KEY / XCCL_TLS_CA (tls_cert.h).
 */
#include "tls_cert.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "config.h"

int tls_cert_wanted(void) { return config_str(CFG_TLS_CERT)[0] != 0; }

static void this_host(char *host, size_t len) {
  if (gethostname(host, len) != 0) snprintf(host, len, "this host");
  host[len - 1] = 0;
}

/* err: "<what> <var>=<path> on host <h>: <why>". -1. */
static int cert_fail(char *err, size_t errlen, const char *var, const char *path, const char *why) {
  char host[256], ossl[256] = "";
  unsigned long e = ERR_peek_last_error();
  if (e) ERR_error_string_n(e, ossl, sizeof(ossl));
  ERR_clear_error();
  this_host(host, sizeof(host));
  snprintf(err, errlen, "TLS on host %s: %s=%s %s%s%s%s", host, var, path, why, ossl[0] ? " (OpenSSL: " : "", ossl,
           ossl[0] ? ")" : "");
  return -1;
}

/* A readable file, else a sentence with errno's reason. */
static int cert_file_ok(char *err, size_t errlen, const char *var, const char *path) {
  if (!path[0]) return cert_fail(err, errlen, var, "(unset)", "must be set too when XCCL_TLS_CERT is");
  if (access(path, R_OK) == 0) return 0;
  char why[160];
  snprintf(why, sizeof(why), "cannot be read: %s", strerror(errno));
  return cert_fail(err, errlen, var, path, why);
}

int tls_cert_configure(SSL_CTX *c, char *err, size_t errlen) {
  const char *cert = config_str(CFG_TLS_CERT), *key = config_str(CFG_TLS_KEY), *ca = config_str(CFG_TLS_CA);
  if (cert_file_ok(err, errlen, "XCCL_TLS_CERT", cert) || cert_file_ok(err, errlen, "XCCL_TLS_KEY", key) ||
      cert_file_ok(err, errlen, "XCCL_TLS_CA", ca))
    return -1;
  if (SSL_CTX_use_certificate_chain_file(c, cert) != 1)
    return cert_fail(err, errlen, "XCCL_TLS_CERT", cert, "is not a PEM certificate");
  if (SSL_CTX_use_PrivateKey_file(c, key, SSL_FILETYPE_PEM) != 1)
    return cert_fail(err, errlen, "XCCL_TLS_KEY", key, "is not a PEM private key");
  if (SSL_CTX_check_private_key(c) != 1)
    return cert_fail(err, errlen, "XCCL_TLS_KEY", key, "is not the key of XCCL_TLS_CERT's certificate");
  X509 *x = SSL_CTX_get0_certificate(c);
  if (x && X509_cmp_current_time(X509_get0_notAfter(x)) < 0)
    return cert_fail(err, errlen, "XCCL_TLS_CERT", cert, "has expired: renew it");
  if (x && X509_cmp_current_time(X509_get0_notBefore(x)) > 0)
    return cert_fail(err, errlen, "XCCL_TLS_CERT", cert, "is not valid yet (check the clock)");
  if (SSL_CTX_load_verify_locations(c, ca, NULL) != 1)
    return cert_fail(err, errlen, "XCCL_TLS_CA", ca, "holds no PEM CA certificate");
  SSL_CTX_set_verify(c, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
  return 0;
}

const char *tls_cert_cause(const SSL *ssl, int reason, char *buf, size_t len) {
  long v = SSL_get_verify_result(ssl);
  if (v != X509_V_OK) {
    snprintf(buf, len, "its certificate failed verification against XCCL_TLS_CA=%s: %s", config_str(CFG_TLS_CA),
             X509_verify_cert_error_string(v));
    return buf;
  }
  switch (reason) {
  case SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED:
    snprintf(buf, len, "it refused our certificate XCCL_TLS_CERT=%s as expired", config_str(CFG_TLS_CERT));
    return buf;
  case SSL_R_TLSV1_ALERT_UNKNOWN_CA:
  case SSL_R_SSLV3_ALERT_BAD_CERTIFICATE:
  case SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN:
  case SSL_R_TLSV1_ALERT_ACCESS_DENIED:
    snprintf(buf, len, "it refused our certificate XCCL_TLS_CERT=%s (signed by a CA it does not trust?)",
             config_str(CFG_TLS_CERT));
    return buf;
  case SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE:
  case SSL_R_CERTIFICATE_VERIFY_FAILED:
    snprintf(buf, len, "it sent no certificate that XCCL_TLS_CA=%s vouches for (XCCL_TLS_CERT unset there?)",
             config_str(CFG_TLS_CA));
    return buf;
  default:
    return NULL;
  }
}

int tls_cert_binding(SSL *ssl, const uint8_t *key, size_t keylen, int server_role,
                     uint8_t out[TLS_CERT_BIND_BYTES]) {
  static const char roles[2][7] = {"client", "server"};
  uint8_t msg[6 + TLS_CERT_BIND_BYTES];
  memcpy(msg, roles[server_role != 0], 6);
  if (SSL_export_keying_material(ssl, msg + 6, TLS_CERT_BIND_BYTES, TLS_CERT_BIND_LABEL,
                                 sizeof(TLS_CERT_BIND_LABEL) - 1, NULL, 0, 0) != 1)
    return -1;
  unsigned int outl = 0;
  const unsigned char *r = HMAC(EVP_sha256(), key, (int)keylen, msg, sizeof(msg), out, &outl);
  OPENSSL_cleanse(msg, sizeof(msg));
  return r && outl == TLS_CERT_BIND_BYTES ? 0 : -1;
}
