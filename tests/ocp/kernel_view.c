/* kernel_view: finds an RDMA device the way the MRC NCCL plugin does, with nothing but
 * libibverbs and sysfs: ibv_get_device_list and ibv_open_device, the device's ports and GIDs,
 * then the RoCE type of a GID from /sys/class/infiniband/<dev>/ports/<p>/gid_attrs/types/<i>,
 * the GID itself from .../ports/<p>/gids/<i> (it must be ibv_query_gid's)
 * and the device's bus path (realpath of /sys/class/infiniband/<dev>/device). Linked against
 * libibverbs only: under `mrc run` it sees mrc's devices as kernel ones (tests/ocp/run_test.sh).
 *
 *   kernel_view <device>      exit 0 and one line if all of it is there, else 1 and the reason
 */
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int fail(const char* what, const char* name) {
  fprintf(stderr, "kernel_view: %s: %s\n", name, what);
  return 1;
}

/* A sysfs file of port `port`'s GID `index` ("gid_attrs/types", "gids"), its first line into
 * `text`. */
static int gid_file(const char* name, const char* what, int port, int index, char* text,
                    size_t size) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "/sys/class/infiniband/%s/ports/%d/%s/%d", name, port, what, index);
  int fd = open(path, O_RDONLY);
  if (fd < 0) return -1;
  ssize_t n = read(fd, text, size - 1);
  close(fd);
  if (n <= 0) return -1;
  text[n] = '\0';
  text[strcspn(text, "\n")] = '\0';
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 2) return fail("usage: kernel_view <device>", "-");
  const char* name = argv[1];
  int n = 0;
  struct ibv_device** list = ibv_get_device_list(&n);
  struct ibv_context* ctx = NULL;
  for (int i = 0; list != NULL && i < n; i++)
    if (strcmp(ibv_get_device_name(list[i]), name) == 0) ctx = ibv_open_device(list[i]);
  if (list != NULL) ibv_free_device_list(list);
  if (ctx == NULL) return fail("no such verbs device (ibv_get_device_list)", name);
  struct ibv_device_attr attr;
  struct ibv_port_attr port;
  union ibv_gid gid;
  if (ibv_query_device(ctx, &attr) != 0 || ibv_query_port(ctx, 1, &port) != 0 ||
      ibv_query_gid(ctx, 1, 3, &gid) != 0)
    return fail("device, port or GID query failed", name);
  char type[32];
  if (gid_file(name, "gid_attrs/types", 1, 3, type, sizeof type) != 0)
    return fail("no sysfs GID type of port 1, GID 3", name);
  if (strcmp(type, "RoCE v2") != 0) return fail("GID 3 is not RoCE v2 in sysfs", name);
  char sysfs_gid[64], queried[64];
  if (gid_file(name, "gids", 1, 3, sysfs_gid, sizeof sysfs_gid) != 0)
    return fail("no sysfs GID 3 of port 1", name);
  for (int g = 0; g < 8; g++)
    snprintf(queried + 5 * g, sizeof queried - 5 * g,
             g == 7 ? "%02x%02x" : "%02x%02x:", gid.raw[2 * g], gid.raw[2 * g + 1]);
  if (strcmp(sysfs_gid, queried) != 0) return fail("sysfs GID 3 is not ibv_query_gid's", name);
  char device[PATH_MAX];
  snprintf(device, sizeof device, "/sys/class/infiniband/%s/device", name);
  char* bus = realpath(device, NULL);
  if (bus == NULL) return fail("no sysfs device path", name);
  printf("kernel_view: %s: %d ports, link layer %s, GID 3 %s, device %s\n", name,
         attr.phys_port_cnt, port.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "other",
         type, bus);
  free(bus);
  ibv_close_device(ctx);
  return 0;
}
