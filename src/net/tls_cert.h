/*
 * tls_cert.h — certificates from files for XCCL_TLS (XCCL_TLS_CERT,
 * XCCL_TLS_KEY, XCCL_TLS_CA): each rank presents its certificate and
 * verifies its peer's against the CA, both ways, in place of the
 * pre-shared key. Ranks connect by address, so the name in a certificate
 * is not checked: the CA decides who may connect, and the job binding
 * (tls_cert_binding) decides which job the peer belongs to.
 */
#ifndef XCCL_NET_TLS_CERT_H
#define XCCL_NET_TLS_CERT_H

#include <openssl/ssl.h>
#include <stddef.h>
#include <stdint.h>

/* 1 when XCCL_TLS_CERT is set (certificates, not the pre-shared key). */
int tls_cert_wanted(void);

/* Loads the certificate, its key and the CA into c and asks for the
 * peer's certificate. 0, or -1 with a sentence in err naming this host
 * and the file (missing, unreadable, not matching, expired). */
int tls_cert_configure(SSL_CTX *c, char *err, size_t errlen);

/* Why a handshake with certificates failed, for the sentence that names
 * the peer: this side's verification of the peer's certificate, or the
 * peer's alert about ours; NULL when neither explains it. */
const char *tls_cert_cause(const SSL *ssl, int reason, char *buf, size_t len);

/* The job binding. A CA usually signs every rank of a cluster, so a
 * certificate alone does not say that the peer is in this job. Once the
 * handshake is over each side sends HMAC-SHA256(key, role || EKM), where
 * key is the stream's key (drawn from the job's secret), role is "client"
 * or "server" (whose value it is, so a peer cannot echo ours back), and EKM
 * is 32 bytes of SSL_export_keying_material under TLS_CERT_BIND_LABEL (the
 * same on both ends of this TLS session, and only of this one, so a value
 * cannot be carried to another stream). Writes the value of the given
 * role to out; 0, or -1 when OpenSSL fails. */
#define TLS_CERT_BIND_BYTES 32
#define TLS_CERT_BIND_LABEL "EXPORTER-xccl-job-binding"
int tls_cert_binding(SSL *ssl, const uint8_t *key, size_t keylen, int server_role,
                     uint8_t out[TLS_CERT_BIND_BYTES]);

#endif
