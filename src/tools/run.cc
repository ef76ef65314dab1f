// `mrc run`: a program run as if mrc's software devices were kernel RDMA devices (tools/run.h).
// Consumers of MRC such as the MRC NCCL plugin find devices with ibv_get_device_list (lib_mrc.so,
// preloaded, answers) and then read sysfs for what libibverbs does not tell them: the device's
// bus path (realpath of /sys/class/infiniband/<dev>/device) and each GID's RoCE type
// (.../ports/<p>/gid_attrs/types/<i>). sysfs cannot be written, so a private mount namespace
// gets a tmpfs where /sys/class/infiniband is, holding those files for each mrc device next to
// the entries of real devices.
#include "tools/run.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "ocp/device_config.h"

namespace mrc::tools {

namespace {

constexpr const char* kClass = "/sys/class";
constexpr const char* kInfiniband = "/sys/class/infiniband";

std::string error_text(const std::string& what) {
  return what + ": " + std::strerror(errno);
}

bool write_file(const std::string& path, const std::string& text, std::string& error) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return error = error_text("cannot create " + path), false;
  const bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  if (!ok) error = error_text("cannot write " + path);
  return ok;
}

bool make_dir(const std::string& path, std::string& error) {
  if (mkdir(path.c_str(), 0755) == 0 || errno == EEXIST) return true;
  return error = error_text("cannot create " + path), false;
}

// The directory of this executable, for the lib_mrc.so beside it.
std::string self_dir() {
  char path[4096];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) return ".";
  std::string s(path, static_cast<size_t>(n));
  return s.substr(0, s.rfind('/'));
}

// --lib, else lib_mrc.so where the build tree or an install puts it next to this mrc.
std::string find_lib(const RunOptions& options, std::string& error) {
  std::vector<std::string> candidates;
  if (!options.lib.empty()) {
    candidates.push_back(options.lib);
  } else {
    const std::string dir = self_dir();
    candidates = {dir + "/../lib/lib_mrc.so", dir + "/../" MRC_INSTALL_LIBDIR "/lib_mrc.so"};
  }
  for (const std::string& c : candidates) {
    char resolved[4096];
    if (access(c.c_str(), R_OK) == 0 && realpath(c.c_str(), resolved) != nullptr) return resolved;
  }
  error = "lib_mrc.so not found (looked at " + candidates.front() +
          (candidates.size() > 1 ? " and " + candidates.back() : "") + "): give it with --lib";
  return "";
}

// A GID as the kernel writes it in sysfs: eight groups of four hex digits.
std::string gid_text(const ocp::DeviceSpec& spec, int port, int index) {
  uint8_t gid[16];
  if (!ocp::plane_gid(spec, port, index, gid)) return "";
  char text[48];
  char* at = text;
  for (size_t g = 0; g < 8; ++g)
    at += std::snprintf(at, text + sizeof text - at,
                        g == 7 ? "%02x%02x\n" : "%02x%02x:", gid[2 * g], gid[2 * g + 1]);
  return text;
}

// One mrc device's entry, as the kernel shows a RoCE device with an address per port.
// Its `device` links to a directory named like a PCI function of its own, as a kernel device's
// links to its PCI device: consumers take the resolved path as the NIC's bus path, merge devices
// whose paths differ only in the function and slot digits, and tell NICs apart by the rest.
// Device index i is domain e000 + i / 256, bus i % 256 (no real PCI domain on a host).
bool write_device(const std::string& root, const ocp::DeviceSpec& spec, size_t device,
                  std::string& error) {
  char bus[32];
  std::snprintf(bus, sizeof bus, "%04zx:%02zx:00.0", 0xe000 + device / 256, device % 256);
  const std::string dir = root + "/" + spec.name;
  const std::string bus_dir = root + "/.bus/" + bus;
  if (!make_dir(root + "/.bus", error) || !make_dir(bus_dir, error) ||
      !write_file(bus_dir + "/numa_node", "-1\n", error) || !make_dir(dir, error) ||
      !write_file(dir + "/node_type", "1: CA\n", error) || !make_dir(dir + "/ports", error))
    return false;
  if (symlink(("../.bus/" + std::string(bus)).c_str(), (dir + "/device").c_str()) != 0)
    return error = error_text("cannot link " + dir + "/device"), false;
  for (size_t p = 1; p <= spec.planes.size(); ++p) {
    const std::string port = dir + "/ports/" + std::to_string(p);
    if (!make_dir(port, error) || !write_file(port + "/link_layer", "Ethernet\n", error) ||
        !make_dir(port + "/gid_attrs", error) || !make_dir(port + "/gid_attrs/types", error) ||
        !make_dir(port + "/gid_attrs/ndevs", error))
      return false;
    if (!make_dir(port + "/gids", error)) return false;
    for (int i = 0; i < 4; ++i) {  // the device's GIDs: RoCEv1/v2, link-local then the plane's
      const std::string index = std::to_string(i);
      if (!write_file(port + "/gids/" + index, gid_text(spec, static_cast<int>(p), i), error))
        return false;
      if (!write_file(port + "/gid_attrs/types/" + index, i % 2 == 0 ? "IB/RoCE v1\n" : "RoCE v2\n",
                      error) ||
          !write_file(port + "/gid_attrs/ndevs/" + index, "lo\n", error))
        return false;
    }
  }
  return true;
}

// A mount namespace of our own, its mounts private to it: as root, or in a new user namespace
// mapping the caller's uid and gid to themselves.
bool enter_namespace(std::string& error) {
  if (geteuid() == 0) {
    if (unshare(CLONE_NEWNS) != 0) return error = error_text("unshare(CLONE_NEWNS)"), false;
  } else {
    const uid_t uid = geteuid();
    const gid_t gid = getegid();
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0)
      return error = error_text("not root, and no user namespace (unshare(CLONE_NEWUSER))"), false;
    std::string ignored;
    (void)write_file("/proc/self/setgroups", "deny", ignored);
    if (!write_file("/proc/self/uid_map", std::to_string(uid) + " " + std::to_string(uid) + " 1",
                    error) ||
        !write_file("/proc/self/gid_map", std::to_string(gid) + " " + std::to_string(gid) + " 1",
                    error))
      return false;
  }
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
    return error = error_text("cannot make the namespace's mounts private"), false;
  return true;
}

// The symbolic links of /sys/class/infiniband (one per real device), by name.
std::vector<std::pair<std::string, std::string>> class_links() {
  std::vector<std::pair<std::string, std::string>> links;
  DIR* d = opendir(kInfiniband);
  if (d == nullptr) return links;
  while (dirent* e = readdir(d)) {
    char target[4096];
    const std::string path = std::string(kInfiniband) + "/" + e->d_name;
    const ssize_t n = readlink(path.c_str(), target, sizeof target - 1);
    if (e->d_name[0] != '.' && n > 0) links.emplace_back(e->d_name, std::string(target, n));
  }
  closedir(d);
  return links;
}

// No /sys/class/infiniband (no RDMA driver loaded): /sys/class becomes a tmpfs holding every
// class directory it had (bind mounts of the originals) and an empty infiniband/.
bool make_class_dir(std::string& error) {
  char staging[] = "/tmp/mrc-run-XXXXXX";
  if (mkdtemp(staging) == nullptr) return error = error_text("cannot create /tmp/mrc-run-*"), false;
  const std::string s = staging;
  bool ok = mount(kClass, staging, nullptr, MS_BIND | MS_REC, nullptr) == 0;
  if (!ok) error = error_text("cannot bind " + std::string(kClass));
  if (ok && mount("tmpfs", kClass, "tmpfs", 0, "mode=755") != 0)
    ok = false, error = error_text("cannot mount a tmpfs on " + std::string(kClass));
  DIR* d = ok ? opendir(staging) : nullptr;
  while (d != nullptr && ok) {
    const dirent* e = readdir(d);
    if (e == nullptr) break;
    if (e->d_name[0] == '.') continue;
    const std::string to = std::string(kClass) + "/" + e->d_name;
    ok = make_dir(to, error) && (mount((s + "/" + e->d_name).c_str(), to.c_str(), nullptr,
                                       MS_BIND | MS_REC, nullptr) == 0 ||
                                 (error = error_text("cannot bind " + to), false));
  }
  if (d != nullptr) closedir(d);
  (void)umount2(staging, MNT_DETACH);
  (void)rmdir(staging);
  return ok && make_dir(kInfiniband, error);
}

// /sys/class/infiniband as a writable tmpfs with the same links to real devices as before.
bool mount_infiniband(std::string& error) {
  struct stat st {};
  if (stat(kInfiniband, &st) != 0) return make_class_dir(error);
  const auto links = class_links();
  if (mount("tmpfs", kInfiniband, "tmpfs", 0, "mode=755") != 0)
    return error = error_text("cannot mount a tmpfs on " + std::string(kInfiniband)), false;
  for (const auto& [name, target] : links)
    if (symlink(target.c_str(), (std::string(kInfiniband) + "/" + name).c_str()) != 0)
      return error = error_text("cannot link " + name), false;
  return true;
}

// The environment the program runs in: the configuration and the preload.
void set_environment(const RunOptions& options, const std::string& lib) {
  if (!options.devices.empty()) {
    char resolved[4096];
    const char* path = realpath(options.devices.c_str(), resolved);
    setenv("MRC_CONFIG", path != nullptr ? path : options.devices.c_str(), 1);
    unsetenv("MRC_DEVICES");
  }
  const char* old = std::getenv("LD_PRELOAD");
  setenv("LD_PRELOAD", (old != nullptr && *old != '\0' ? lib + ":" + old : lib).c_str(), 1);
}

}  // namespace

void add_run_options(CLI::App& app, RunOptions& options) {
  app.add_option("--devices", options.devices,
                 "the device configuration file (given to the program as MRC_CONFIG, MRC_DEVICES "
                 "unset); default: the environment's MRC_DEVICES, MRC_CONFIG or "
                 "/etc/mrc/devices.conf")
      ->check(CLI::ExistingFile);
  app.add_option("--lib", options.lib,
                 "the lib_mrc.so to preload (default: the one beside this mrc, ../lib)");
  // The program and its arguments follow "--"; main() takes them before CLI11 parses (they are
  // the program's, passed untouched: brackets, commas, options).
  app.add_flag("--no-sysfs", options.no_sysfs,
               "no private /sys/class/infiniband (no namespace needed): preload and "
               "configuration only");
  app.footer(
      "Runs the program with lib_mrc.so preloaded and, in a private mount namespace (as root, "
      "else a user namespace), a tmpfs on /sys/class/infiniband holding for each mrc device "
      "node_type, device (a link to a PCI-like directory .bus/e000:<i>:00.0), "
      "ports/<p>/link_layer and ports/<p>/gids/<i> and ports/<p>/gid_attrs/{types,ndevs}/<i>, as a "
      "kernel RoCE device has them; real devices' entries stay. The program and its arguments "
      "follow --. Exit status: the program's; 1 if "
      "it cannot be set up (the reason is printed), 127 if the program cannot be run.");
}

int run_run(const RunOptions& options) {
  if (options.command.empty())
    return std::fprintf(stderr, "mrc run: no program given (mrc run [options] -- CMD [ARGS])\n"), 2;
  std::string error;
  const std::string lib = find_lib(options, error);
  if (lib.empty()) return std::fprintf(stderr, "mrc run: %s\n", error.c_str()), 1;
  set_environment(options, lib);
  const ocp::DeviceConfig& config = ocp::device_config();  // read as lib_mrc.so will read it
  if (!config.error.empty() || config.devices.empty())
    return std::fprintf(stderr, "mrc run: no usable device configuration (%s)\n",
                        config.error.empty() ? "no devices" : config.error.c_str()),
           1;
  if (!options.no_sysfs) {
    bool ok = enter_namespace(error) && mount_infiniband(error);
    for (size_t i = 0; ok && i < config.devices.size(); ++i)
      ok = write_device(kInfiniband, config.devices[i], i, error);
    if (!ok)
      return std::fprintf(stderr,
                          "mrc run: cannot give the program a /sys/class/infiniband of the mrc "
                          "devices: %s (run as root, allow user namespaces "
                          "(sysctl user.max_user_namespaces), or run with --no-sysfs)\n",
                          error.c_str()),
             1;
  }
  std::vector<char*> argv;
  for (const std::string& a : options.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execvp(argv[0], argv.data());
  std::fprintf(stderr, "mrc run: cannot run %s: %s\n", argv[0], std::strerror(errno));
  return 127;
}

}  // namespace mrc::tools
