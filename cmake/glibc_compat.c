/* glibc_compat.c: linked into the Python wheel's shared libraries (libml_<isa>.so, libml_probe.so) of
   an ML_PORTABLE build (cmake/Portable.cmake, ml_portable_shared) so that they load on glibc 2.17
   (CentOS 7; on RISC-V 2.27, its first glibc) although Debian 12's glibc 2.36 links them. They carry
   libstdc++ and libgcc inside (-static-libstdc++ -static-libgcc), and libstdc++.a / libgcc_eh.a were
   compiled against glibc 2.36: their references bind to the newest version of each libc symbol.
   verify/package_test.py reads the versions the libraries need and fails above GLIBC_2.17 (RISC-V:
   2.27).

   Two kinds of symbol, each listed below with the reason it is here:
   1. No version at or below the line exists: a local (hidden) definition here satisfies the reference
      inside the library, so the dynamic linker never looks for glibc's. (The version script
      cmake/ml_shared.map keeps them out of the library's exports too.)
        __libc_single_threaded  (2.32) libstdc++ skips atomic reference counts when it is nonzero;
                                       0, "not known to be single-threaded", is always correct.
        _dl_find_object         (2.35) libgcc's unwinder finds a PC's .eh_frame_hdr with it: a
                                       real implementation over dl_iterate_phdr (2.2.5) and
                                       PT_GNU_EH_FRAME, so C++ exceptions still unwind.
        arc4random              (2.36) std::random_device's default source: the getrandom system
                                       call (Linux 3.17), else /dev/urandom.
        getentropy              (2.25) std::random_device("getentropy"): the same source.
                                       (RISC-V: glibc's own, 2.27, is used.)
        __cxa_thread_atexit_impl (2.18) runs a thread_local object's destructor when its thread
                                       ends (RISC-V: glibc's own, 2.27, is used): a per-thread
                                       list run by a pthread key's destructor (as libstdc++ does
                                       where glibc lacks it). Unlike glibc's it
                                       does not run the main thread's at exit() (the process
                                       ends; nothing is left to free) nor pin the library against
                                       dlclose (ctypes never unloads it).
      ARMv7's libgcc unwinds through .ARM.exidx, found by glibc's __gnu_Unwind_Find_exidx
      (GLIBC_2.4), not _dl_find_object: the definition is there but unused.
   2. An older version exists (glibc keeps the old ones as compatibility symbols): the link wraps
      the reference (-Wl,--wrap=SYM, the list ML_GLIBC_WRAP in cmake/Portable.cmake) and
      __wrap_SYM calls the old version, bound by .symver:
        pthread_create pthread_join pthread_detach pthread_once pthread_key_create
        __pthread_key_create pthread_key_delete pthread_getspecific pthread_setspecific
                                (2.34: moved from libpthread.so.0 into libc.so.6; an old system has
                                 them in libpthread.so.0, which the libraries therefore also need:
                                 -lpthread, --no-as-needed)
        fstat fstat64 stat      (2.33: before, they were header inlines calling __fxstat / __fxstat64
                                 / __xstat with the struct's version number)
        expf logf powf exp2f log2f (2.27) and exp log pow (2.29): the new ones dropped the SVID
                                error handling. On the old system the old libm computes them: for
                                exp/log/pow (the sampler's softmax) glibc before 2.28 rounded
                                correctly where the new code is within an ulp, so a sampled (not
                                greedy) token stream there may differ from the static programs'.
   The old version's name is the architecture's first glibc, and the stat version number the one its
   old <bits/stat.h> passed (_STAT_VER), in the table below: x86-64 GLIBC_2.2.5 and 1; AArch64
   GLIBC_2.17 and 0; ARMv7 (hard float) GLIBC_2.4 and 3 (_STAT_VER_LINUX of 32-bit Linux's generic
   ABI, as i386); RISC-V 64 GLIBC_2.27 and 0. On RISC-V the libm functions' only version is 2.27 (the
   new code), so their wraps bind the same functions as without them.
   ARMv7 is 32-bit: the libraries (and libstdc++.a, built for Debian 12's armhf without 64-bit
   time_t) use the 32-bit-offset struct stat, so fstat/stat go to __fxstat/__xstat and fstat64 to
   __fxstat64; nothing binds a time64 variant (__fstat64_time64, 2.34), which verify/package_test.py
   would refuse. This file is compiled with the same struct stat: _FILE_OFFSET_BITS and _TIME_BITS are
   undefined below. */
#define _GNU_SOURCE 1
#undef _FILE_OFFSET_BITS /* struct stat is the one __fxstat/__xstat fill (32-bit ARM: not stat64) */
#undef _TIME_BITS
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define ML_OLD_GLIBC "GLIBC_2.2.5"
#define ML_OLD_MINOR 2 /* the 2 of GLIBC_2.2.5: the local definitions below compare with it */
#define ML_STAT_VER 1 /* _STAT_VER_LINUX of x86-64's old <sys/stat.h> */
#elif defined(__aarch64__)
#define ML_OLD_GLIBC "GLIBC_2.17"
#define ML_OLD_MINOR 17
#define ML_STAT_VER 0 /* _STAT_VER of the generic ABI */
#elif defined(__arm__) && defined(__ARM_PCS_VFP)
#define ML_OLD_GLIBC "GLIBC_2.4"
#define ML_OLD_MINOR 4
#define ML_STAT_VER 3 /* _STAT_VER_LINUX of 32-bit Linux's old <bits/stat.h> (i386, ARM) */
#elif defined(__riscv) && __riscv_xlen == 64
#define ML_OLD_GLIBC "GLIBC_2.27"
#define ML_OLD_MINOR 27
#define ML_STAT_VER 0 /* _STAT_VER of the generic ABI */
#else
#error "glibc_compat.c: only x86-64, AArch64, ARMv7 hard float, RISC-V 64 (cmake/Portable.cmake links it there)"
#endif

#define ML_HIDDEN __attribute__((visibility("hidden")))
#define ML_OLD(ret, old, sym, args) \
  extern ret old args;              \
  __asm__(".symver " #old ", " #sym "@" ML_OLD_GLIBC);

/* ---- 1. local definitions ------------------------------------------------------------------- */

ML_HIDDEN char __libc_single_threaded = 0;

struct ml_find {
  uintptr_t pc;
  struct dl_find_object *out;
  int found;
};

static int ml_find_object_cb(struct dl_phdr_info *info, size_t size, void *data) {
  struct ml_find *f = (struct ml_find *)data;
  (void)size;
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  const ElfW(Phdr) *eh = NULL;
  int inside = 0;
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type == PT_LOAD) {
      const uintptr_t start = info->dlpi_addr + ph->p_vaddr, end = start + ph->p_memsz;
      if (start < lo) lo = start;
      if (end > hi) hi = end;
      if (f->pc >= start && f->pc < end) inside = 1;
    } else if (ph->p_type == PT_GNU_EH_FRAME) {
      eh = ph;
    }
  }
  if (!inside) return 0;
  f->out->dlfo_flags = 0;
  f->out->dlfo_map_start = (void *)lo;
  f->out->dlfo_map_end = (void *)hi;
  f->out->dlfo_link_map = NULL; /* libgcc's unwinder reads only the fields above and the next */
  f->out->dlfo_eh_frame = eh ? (void *)(info->dlpi_addr + eh->p_vaddr) : NULL;
  f->found = 1;
  return 1;
}

/* glibc's contract: 0 and *result filled when pc lies in a loaded object, else -1. */
ML_HIDDEN int _dl_find_object(void *pc, struct dl_find_object *result) {
  struct ml_find f = {(uintptr_t)pc, result, 0};
  dl_iterate_phdr(ml_find_object_cb, &f);
  return f.found ? 0 : -1;
}

/* Fills buf with n random bytes: getrandom, or /dev/urandom on kernels before 3.17. 0 or -1. */
static int ml_random_bytes(void *buf, size_t n) {
  unsigned char *p = (unsigned char *)buf;
  size_t done = 0;
#ifdef SYS_getrandom
  while (done < n) {
    const long r = syscall(SYS_getrandom, p + done, n - done, 0);
    if (r > 0) {
      done += (size_t)r;
    } else if (r < 0 && errno == EINTR) {
      continue;
    } else {
      break;
    }
  }
  if (done == n) return 0;
#endif
  const int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  while (done < n) {
    const ssize_t r = read(fd, p + done, n - done);
    if (r > 0) {
      done += (size_t)r;
    } else if (!(r < 0 && errno == EINTR)) {
      break;
    }
  }
  close(fd);
  return done == n ? 0 : -1;
}

ML_HIDDEN uint32_t arc4random(void) {
  uint32_t v = 0;
  while (ml_random_bytes(&v, sizeof v) != 0) {
  }  /* glibc's arc4random never fails either (it aborts); no source at all cannot happen on Linux */
  return v;
}

#if ML_OLD_MINOR < 25
ML_HIDDEN int getentropy(void *buf, size_t n) {
  if (n > 256) {
    errno = EIO;
    return -1;
  }
  return ml_random_bytes(buf, n);
}
#endif

/* ---- 2. wrapped references, calling the old version ----------------------------------------- */

ML_OLD(int, ml_old_pthread_create, pthread_create, (pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))
ML_OLD(int, ml_old_pthread_join, pthread_join, (pthread_t, void **))
ML_OLD(int, ml_old_pthread_detach, pthread_detach, (pthread_t))
ML_OLD(int, ml_old_pthread_once, pthread_once, (pthread_once_t *, void (*)(void)))
ML_OLD(int, ml_old_pthread_key_create, pthread_key_create, (pthread_key_t *, void (*)(void *)))
ML_OLD(int, ml_old___pthread_key_create, __pthread_key_create, (pthread_key_t *, void (*)(void *)))
ML_OLD(int, ml_old_pthread_key_delete, pthread_key_delete, (pthread_key_t))
ML_OLD(void *, ml_old_pthread_getspecific, pthread_getspecific, (pthread_key_t))
ML_OLD(int, ml_old_pthread_setspecific, pthread_setspecific, (pthread_key_t, const void *))
ML_OLD(int, ml_old___fxstat, __fxstat, (int, int, struct stat *))
ML_OLD(int, ml_old___fxstat64, __fxstat64, (int, int, struct stat64 *))
ML_OLD(int, ml_old___xstat, __xstat, (int, const char *, struct stat *))
ML_OLD(double, ml_old_exp, exp, (double))
ML_OLD(double, ml_old_log, log, (double))
ML_OLD(double, ml_old_pow, pow, (double, double))
ML_OLD(float, ml_old_expf, expf, (float))
ML_OLD(float, ml_old_logf, logf, (float))
ML_OLD(float, ml_old_powf, powf, (float, float))
ML_OLD(float, ml_old_exp2f, exp2f, (float))
ML_OLD(float, ml_old_log2f, log2f, (float))

ML_HIDDEN int __wrap_pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*f)(void *), void *arg) {
  return ml_old_pthread_create(t, a, f, arg);
}
ML_HIDDEN int __wrap_pthread_join(pthread_t t, void **r) { return ml_old_pthread_join(t, r); }
ML_HIDDEN int __wrap_pthread_detach(pthread_t t) { return ml_old_pthread_detach(t); }
ML_HIDDEN int __wrap_pthread_once(pthread_once_t *o, void (*f)(void)) { return ml_old_pthread_once(o, f); }
ML_HIDDEN int __wrap_pthread_key_create(pthread_key_t *k, void (*d)(void *)) { return ml_old_pthread_key_create(k, d); }
ML_HIDDEN int __wrap___pthread_key_create(pthread_key_t *k, void (*d)(void *)) {
  return ml_old___pthread_key_create(k, d);
}
ML_HIDDEN int __wrap_pthread_key_delete(pthread_key_t k) { return ml_old_pthread_key_delete(k); }
ML_HIDDEN void *__wrap_pthread_getspecific(pthread_key_t k) { return ml_old_pthread_getspecific(k); }
ML_HIDDEN int __wrap_pthread_setspecific(pthread_key_t k, const void *v) { return ml_old_pthread_setspecific(k, v); }
ML_HIDDEN int __wrap_fstat(int fd, struct stat *st) { return ml_old___fxstat(ML_STAT_VER, fd, st); }
ML_HIDDEN int __wrap_fstat64(int fd, struct stat64 *st) { return ml_old___fxstat64(ML_STAT_VER, fd, st); }
ML_HIDDEN int __wrap_stat(const char *path, struct stat *st) { return ml_old___xstat(ML_STAT_VER, path, st); }
ML_HIDDEN double __wrap_exp(double x) { return ml_old_exp(x); }
ML_HIDDEN double __wrap_log(double x) { return ml_old_log(x); }
ML_HIDDEN double __wrap_pow(double x, double y) { return ml_old_pow(x, y); }
ML_HIDDEN float __wrap_expf(float x) { return ml_old_expf(x); }
ML_HIDDEN float __wrap_logf(float x) { return ml_old_logf(x); }
ML_HIDDEN float __wrap_powf(float x, float y) { return ml_old_powf(x, y); }
ML_HIDDEN float __wrap_exp2f(float x) { return ml_old_exp2f(x); }
ML_HIDDEN float __wrap_log2f(float x) { return ml_old_log2f(x); }

/* ---- 1 (continued): thread_local destructors, over the old pthread key functions ------------- */
#if ML_OLD_MINOR < 18

struct ml_tls_dtor {
  void (*dtor)(void *);
  void *obj;
  struct ml_tls_dtor *next;
};
static __thread struct ml_tls_dtor *ml_tls_dtors; /* newest first: run in reverse order of construction */
static pthread_key_t ml_tls_key;
static pthread_once_t ml_tls_once = PTHREAD_ONCE_INIT;

static void ml_tls_run(void *unused) {
  (void)unused;
  while (ml_tls_dtors) {
    struct ml_tls_dtor *d = ml_tls_dtors;
    ml_tls_dtors = d->next;
    d->dtor(d->obj);
    free(d);
  }
}
static void ml_tls_init(void) { ml_old_pthread_key_create(&ml_tls_key, ml_tls_run); }

ML_HIDDEN int __cxa_thread_atexit_impl(void (*dtor)(void *), void *obj, void *dso) {
  (void)dso;
  ml_old_pthread_once(&ml_tls_once, ml_tls_init);
  struct ml_tls_dtor *d = (struct ml_tls_dtor *)malloc(sizeof *d);
  if (!d) return -1;
  d->dtor = dtor;
  d->obj = obj;
  d->next = ml_tls_dtors;
  ml_tls_dtors = d;
  return ml_old_pthread_setspecific(ml_tls_key, &ml_tls_key); /* non-null: the key's destructor runs */
}
#endif
