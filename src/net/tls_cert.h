/*
 * tls_cert.h — certificates from files for XCCL_TLS (XCCL_TLS_CERT,
 * XCCL_TLS_KEY, XCCL_TLS_CA): each rank presents its certificate and
 * verifies its peer's against the CA, both ways, in place of the
 * pre-shared key. Ranks connect by address, so the name in a certificate
 * is not checked: the CA decides who is a rank.
 */
#ifndef XCCL_NET_TLS_CERT_H
#define XCCL_NET_TLS_CERT_H

#include <openssl/ssl.h>
#include <stddef.h>

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

#endif
