/* test_ib_hca.c — XCCL_IB_HCA parsing and matching (net_ib_hca.h). */
#include <string.h>
#include <sys/socket.h>

#include "net_ib_hca.h"
#include "test_util.h"

static int use(const char *spec, const char *dev, int port) {
  ib_hca_filter_t f;
  char why[128];
  if (ib_hca_parse(spec, &f, why, sizeof(why)) != 0) {
    CHECK(0, "'%s' did not parse: %s", spec, why);
    return -1;
  }
  return ib_hca_match(&f, dev, port);
}

static void bad(const char *spec, const char *needle) {
  ib_hca_filter_t f;
  f.n = 99;
  char why[128] = "";
  CHECK(ib_hca_parse(spec, &f, why, sizeof(why)) == -1, "'%s' parsed", spec);
  CHECK(f.n == 99, "'%s': the filter was written on failure", spec);
  CHECK(strstr(why, needle) != NULL, "'%s': reason '%s' lacks '%s'", spec, why, needle);
}

int main(void) {
  CHECK(use("", "mlx5_0", 1) == 1, "empty: all");
  CHECK(use(NULL, "rxe0", 1) == 1, "NULL: all");
  CHECK(use("mlx5_0:1,mlx5_1", "mlx5_0", 1) == 1, "device and port");
  CHECK(use("mlx5_0:1,mlx5_1", "mlx5_0", 2) == 0, "other port");
  CHECK(use("mlx5_0:1,mlx5_1", "mlx5_1", 2) == 1, "any port of mlx5_1");
  CHECK(use("mlx5_0:1,mlx5_1", "mlx4_0", 1) == 0, "not listed");
  CHECK(use("mlx5", "mlx5_3", 1) == 1, "prefix");
  CHECK(use("mlx5_1", "mlx5_10", 1) == 1, "prefix matches mlx5_10");
  CHECK(use("=mlx5_1", "mlx5_10", 1) == 0, "exact does not match mlx5_10");
  CHECK(use("=mlx5_1", "mlx5_1", 1) == 1, "exact");
  CHECK(use("^mlx5_2", "mlx5_2", 1) == 0, "excluded");
  CHECK(use("^mlx5_2", "mlx5_0", 1) == 1, "not excluded");
  CHECK(use("^mlx5_2:1", "mlx5_2", 2) == 1, "other port not excluded");
  CHECK(use("^=rxe", "rxe0", 1) == 1, "exact exclusion by a prefix name");
  CHECK(use("^=rxe0", "rxe0", 1) == 0, "exact exclusion");
  CHECK(use(" rxe0 , ,mlx5_0:1", "rxe0", 1) == 1, "spaces and empty entries");
  bad("mlx5_0:x", "port");
  bad("mlx5_0:0", "port");
  bad("mlx5_0:", "port");
  bad(":1", "no device name");
  /* Link speeds: the codes, and the kernel's rate text for codes the table lacks. */
  CHECK(ib_speed_mbps(2, 128) == 400000, "4X NDR: %d", ib_speed_mbps(2, 128));
  CHECK(ib_speed_mbps(2, 256) == 800000, "4X XDR (active_speed_ex): %d", ib_speed_mbps(2, 256));
  CHECK(ib_speed_mbps(1, 1) == 2500, "1X SDR: %d", ib_speed_mbps(1, 1));
  CHECK(ib_speed_mbps(2, 0) == 0 && ib_speed_mbps(3, 64) == 0, "unknown codes read as 0");
  CHECK(ib_rate_text_mbps("400 Gb/sec (4X NDR)\n") == 400000, "sysfs NDR: %d", ib_rate_text_mbps("400 Gb/sec (4X NDR)"));
  CHECK(ib_rate_text_mbps("2.5 Gb/sec (1X SDR)") == 2500, "sysfs SDR");
  CHECK(ib_rate_text_mbps("800 Gb/sec (4X XDR)") == 800000, "sysfs XDR");
  CHECK(ib_rate_text_mbps("") == 0 && ib_rate_text_mbps("fast") == 0 && ib_rate_text_mbps("10 MB/s") == 0,
        "not a rate");
  /* XCCL_IB_ADDR_RANGE and XCCL_IB_ADDR_FAMILY. */
  ib_addr_range_t r;
  char why[128];
  uint8_t a4[4] = {10, 47, 0, 2}, b4[4] = {10, 48, 0, 2}, a6[16] = {0xfd, 0x12};
  CHECK(ib_addr_range_parse("10.47.0.0/16", &r, why, sizeof(why)) == 0, "10.47.0.0/16: %s", why);
  CHECK(ib_addr_range_has(&r, AF_INET, a4) && !ib_addr_range_has(&r, AF_INET, b4), "/16 match");
  CHECK(!ib_addr_range_has(&r, AF_INET6, a6), "an IPv6 address is not in an IPv4 range");
  CHECK(ib_addr_range_parse("10.32.0.0/11", &r, why, sizeof(why)) == 0 && ib_addr_range_has(&r, AF_INET, b4) &&
            ib_addr_range_has(&r, AF_INET, a4),
        "/11 takes 10.47 and 10.48 (a partial byte)");
  CHECK(ib_addr_range_parse("10.32.0.0/12", &r, why, sizeof(why)) == 0 && ib_addr_range_has(&r, AF_INET, b4) == 0 &&
            ib_addr_range_has(&r, AF_INET, a4),
        "/12 takes 10.47 but not 10.48");
  CHECK(ib_addr_range_parse("fd00::/8", &r, why, sizeof(why)) == 0 && ib_addr_range_has(&r, AF_INET6, a6) &&
            !ib_addr_range_has(&r, AF_INET, a4),
        "fd00::/8");
  CHECK(ib_addr_range_parse("10.47.0.2", &r, why, sizeof(why)) == 0 && r.prefix == 32 &&
            ib_addr_range_has(&r, AF_INET, a4),
        "a bare address is /32");
  CHECK(ib_addr_range_parse("", &r, why, sizeof(why)) == 0 && ib_addr_range_has(&r, AF_INET, b4), "no range: any");
  ib_addr_range_t keep = {.family = 99};
  CHECK(ib_addr_range_parse("10.0.0.0/33", &keep, why, sizeof(why)) == -1 && keep.family == 99 &&
            strstr(why, "0 to 32"),
        "/33 refused, nothing written: %s", why);
  CHECK(ib_addr_range_parse("tenfour/8", &keep, why, sizeof(why)) == -1 && strstr(why, "neither"), "not an address");
  int fam = -1;
  CHECK(ib_addr_family_parse("AF_INET6", &fam, why, sizeof(why)) == 0 && fam == AF_INET6, "AF_INET6");
  CHECK(ib_addr_family_parse("af_inet", &fam, why, sizeof(why)) == 0 && fam == AF_INET, "af_inet");
  CHECK(ib_addr_family_parse("", &fam, why, sizeof(why)) == 0 && fam == 0, "empty");
  CHECK(ib_addr_family_parse("AF_UNIX", &fam, why, sizeof(why)) == -1 && strstr(why, "AF_INET or AF_INET6"), "AF_UNIX");
  return test_finish("test_ib_hca");
}
