/* Test-only LD_PRELOAD shim: file locks that succeed without locking, as on a parallel filesystem whose locks are
 * node-local (Lustre's localflock, GPFS on another login node). flock(2) always; fcntl(2)'s record locks too when
 * LADDER_NO_FCNTL_LOCKS=1 (SQLite's own locks: only for a test whose other coordinator is frozen meanwhile, since
 * SQLite resets the -shm of a database it finds unlocked). Everything else goes to libc. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>

int flock(int fd, int op) {
  (void)fd;
  (void)op;
  return 0;
}

static int NoFcntlLocks(void) {
  const char* v = getenv("LADDER_NO_FCNTL_LOCKS");
  return v && strcmp(v, "1") == 0;
}

static int Fcntl(const char* name, int fd, int cmd, void* arg) {
  if (NoFcntlLocks()) {
    if (cmd == F_SETLK || cmd == F_SETLKW || cmd == F_OFD_SETLK || cmd == F_OFD_SETLKW) return 0;
    if (cmd == F_GETLK || cmd == F_OFD_GETLK) {
      ((struct flock*)arg)->l_type = F_UNLCK;
      return 0;
    }
  }
  int (*real)(int, int, ...) = (int (*)(int, int, ...))dlsym(RTLD_NEXT, name);
  return real(fd, cmd, arg);
}

int fcntl(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  void* arg = va_arg(ap, void*);
  va_end(ap);
  return Fcntl("fcntl", fd, cmd, arg);
}

int fcntl64(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  void* arg = va_arg(ap, void*);
  va_end(ap);
  return Fcntl("fcntl64", fd, cmd, arg);
}
