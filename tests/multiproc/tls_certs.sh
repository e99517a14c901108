#!/bin/sh
# XCCL_TLS with certificates (XCCL_TLS_CERT/KEY/CA), as processes: two ranks
# under xccl-run on loopback, the socket transport only (issue 48).
#   1. both with a certificate the CA signed: every all-reduce checks out,
#      and the INFO output says the bootstrap's connections and the
#      streams used certificates and passed the job binding;
#   2. rank 1 with an expired certificate: init fails on both ranks; rank 1
#      at once, naming its host and the file; rank 0 by XCCL_TIMEOUT.
# The certificates are made here with the openssl command, in a temporary
# folder that goes on exit (never committed). Skips (77) without openssl.
#   tls_certs.sh XCCL_RUN XCCL_PERF
run=$1 perf=$2
command -v openssl >/dev/null || { echo "SKIPPED: no openssl command to make test certificates"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0
P="-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
if ! (cd "$dir" &&
  openssl req -x509 $P -keyout ca.key -out ca.pem -subj /CN=xccl-test-ca -days 2 &&
  openssl req $P -keyout rank.key -out rank.csr -subj /CN=xccl-rank &&
  openssl x509 -req -in rank.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out rank.pem -days 2 &&
  openssl x509 -req -in rank.csr -CA ca.pem -CAkey ca.key -out expired.pem -days -1) >"$dir/openssl.log" 2>&1; then
  echo "SKIPPED: the openssl command could not make the test certificates:"
  cat "$dir/openssl.log"
  exit 77
fi
export XCCL_TLS=1 XCCL_SHM_DISABLE=1 XCCL_TLS_CERT="$dir/rank.pem" XCCL_TLS_KEY="$dir/rank.key" XCCL_TLS_CA="$dir/ca.pem"

# 1. Signed certificates: the data arrives, over certificates.
if XCCL_TIMEOUT=30 XCCL_DEBUG=INFO XCCL_DEBUG_SUBSYS=NET "$run" -n 2 "$perf" allreduce -b 4 -e 1M -f 16 -n 2 -w 1 \
  -c 1 >"$dir/good.log" 2>&1; then
  # Each TLS connection says so once its job binding passed: the bootstrap's
  # ("bootstrap peer ...") and the transport's ("(stream i of n)") alike.
  nb=$(grep -c "TLS with bootstrap peer .*certificates bound to the job" "$dir/good.log")
  ns=$(grep -c "TLS with .*(stream .*certificates bound to the job" "$dir/good.log")
  if [ "$nb" -gt 0 ] && [ "$ns" -gt 0 ]; then
    echo "PASS: all-reduce over certificates bound to the job ($nb bootstrap connections, $ns streams said so)"
  else
    echo "FAIL: the run passed but $nb bootstrap connections and $ns streams say they used certificates bound to the job"
    grep "TLS with" "$dir/good.log" | head -n 5
    fail=1
  fi
else
  echo "FAIL: all-reduce with signed certificates"
  tail -n 20 "$dir/good.log"
  fail=1
fi

# 2. Rank 1's certificate has expired.
t0=$(date +%s)
XCCL_TIMEOUT=5 "$run" -n 2 sh -c \
  'if [ "$XCCL_RANK" = 1 ]; then export XCCL_TLS_CERT="$0"; fi; exec "$1" allreduce -b 4 -e 4 -n 1 -w 0' \
  "$dir/expired.pem" "$perf" >"$dir/expired.log" 2>&1
st=$?
took=$(($(date +%s) - t0))
if [ $st -eq 0 ]; then
  echo "FAIL: a rank with an expired certificate ran"
  fail=1
elif ! grep -q "XCCL_TLS_CERT=$dir/expired.pem has expired" "$dir/expired.log" ||
  ! grep -q "TLS on host $(hostname)" "$dir/expired.log"; then
  echo "FAIL: the refusal does not name the host and the expired file:"
  tail -n 10 "$dir/expired.log"
  fail=1
elif [ "$took" -gt 20 ]; then
  echo "FAIL: the ranks took $took s to fail (XCCL_TIMEOUT=5)"
  fail=1
else
  echo "PASS: an expired certificate refused in $took s: $(grep -m1 -o 'TLS on host.*has expired[^)]*' "$dir/expired.log")"
fi
exit $fail
