// The installed bin/ml_run, bin/ml_bench, bin/ml_tokenize (and bin/ml_server): one small program,
// compiled WITHOUT ISA flags, that starts the best installed build for this CPU.
//
//   PREFIX/bin/<program>                      this launcher (one copy per program name)
//   PREFIX/libexec/legacy-ml/<isa>/bin/<program>   the builds, one per ISA (tools/install.sh)
//
// It detects the CPU with the CPU guard's own code (simd/cpu_guard.cc, through simd/cpu_select.cc),
// walks the ISA table's fallback chain from this CPU's best ISA down to scalar, takes the first ISA
// that the CPU runs and that is installed, and execs that build with the same arguments. It sets
// ML_LAUNCHER_CHOICE to which build and why (ml_run --version prints it).
//
// Environment:
//   ML_ISA=<isa>          run that build (neon-dotprod or neon_dotprod), even if the CPU lacks its
//                         features: the build's own guard then refuses in one line (exit 5)
//   ML_EXEC_WRAPPER=cmd   exec "cmd ... <build> <args>" instead of the build itself (words split at
//                         spaces). For emulation: qemu-user does not follow execve into the emulator
//                         (without binfmt_misc the child would run on the host CPU), so a test runs
//                         `ML_EXEC_WRAPPER="qemu-x86_64 -cpu Nehalem" qemu-x86_64 -cpu Nehalem bin/ml_run`
//                         and the chosen build runs on the same emulated CPU the launcher detected.
// Exit status: the build's, or 5 (ML_E_ISA) when no installed build runs on this CPU, 6 (ML_E_ARG)
// for an ML_ISA that is not installed, 1 (ML_E_IO) when the build cannot be executed.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <unistd.h>

#include "simd/cpu_select.h"

namespace {

struct Install {
  std::string libexec;  // PREFIX/libexec/legacy-ml
  std::string program;  // ml_run, ...
  std::string build(const char *isa) const { return libexec + "/" + isa + "/bin/" + program; }
};

bool installed(const char *isa, void *ctx) {
  const Install *in = static_cast<const Install *>(ctx);
  return access(in->build(isa).c_str(), X_OK) == 0;
}

std::string dirname_of(const std::string &p) {
  const size_t s = p.rfind('/');
  if (s == std::string::npos) return ".";
  return s == 0 ? "/" : p.substr(0, s);
}

// This executable's path: /proc/self/exe (qemu-user answers it with the emulated program's path),
// else argv[0] when it names a path.
std::string self_path(const char *argv0) {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n > 0) return std::string(buf, size_t(n));
  return argv0 ? argv0 : "";
}

int fail(const Install &in, int code, const std::string &msg) {
  std::fprintf(stderr, "%s: %s\n", in.program.c_str(), msg.c_str());
  return code;
}

}  // namespace

int main(int argc, char **argv) {
  Install in;
  const std::string self = self_path(argc > 0 ? argv[0] : nullptr);
  const std::string a0 = argc > 0 && argv[0] ? argv[0] : "ml_run";
  in.program = a0.substr(a0.rfind('/') == std::string::npos ? 0 : a0.rfind('/') + 1);
  in.libexec = dirname_of(dirname_of(self)) + "/libexec/legacy-ml";

  const char *forced = std::getenv("ML_ISA");
  const ml::IsaChoice c = ml::isa_choose(installed, &in, forced);
  if (c.status == 6)
    return fail(in, 6, "ML_ISA=" + std::string(forced) + ": no such build in " + in.libexec + " (installed: " + c.installed + ")");
  if (c.status == 5)
    return fail(in, 5, "no installed build runs on this CPU (installed in " + in.libexec + ": " + c.installed + ")");
  const ml::IsaRow *row = c.row;
  const std::string &why = c.why;
  setenv("ML_LAUNCHER_CHOICE", why.c_str(), 1);

  const std::string path = in.build(row->name);
  std::vector<std::string> words;
  if (const char *w = std::getenv("ML_EXEC_WRAPPER")) {
    for (const char *p = w; *p;) {
      while (*p == ' ') ++p;
      const char *e = p;
      while (*e && *e != ' ') ++e;
      if (e > p) words.emplace_back(p, e);
      p = e;
    }
  }
  std::vector<char *> av;
  for (std::string &w : words) av.push_back(&w[0]);
  av.push_back(const_cast<char *>(path.c_str()));
  for (int i = 1; i < argc; ++i) av.push_back(argv[i]);
  av.push_back(nullptr);
  if (words.empty())
    execv(path.c_str(), av.data());
  else
    execvp(av[0], av.data());
  return fail(in, 1, "cannot run " + std::string(av[0]) + ": " + std::strerror(errno));
}
