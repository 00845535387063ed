// StopSignal (server/stop_signal.h): sigwait on POSIX, a console control handler on Windows.
#include "stop_signal.h"

#ifdef _WIN32
#include <windows.h>

#include <condition_variable>
#include <mutex>

namespace ml::server {
namespace {
std::mutex mu;
std::condition_variable cv;
bool stop_requested = false;

void request_stop() {
  {
    std::lock_guard<std::mutex> lock(mu);
    stop_requested = true;
  }
  cv.notify_all();
}

BOOL WINAPI on_console_event(DWORD) {  // Ctrl-C, Ctrl-Break, close, logoff, shutdown: all stop
  request_stop();
  return TRUE;
}
}  // namespace

void StopSignal::block() { SetConsoleCtrlHandler(on_console_event, TRUE); }
void StopSignal::wait() {
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [] { return stop_requested; });
}
void StopSignal::wake() { request_stop(); }

}  // namespace ml::server

#else
#include <pthread.h>
#include <signal.h>

#include <csignal>
#include <mutex>

namespace ml::server {
namespace {
sigset_t stop_set() {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGINT);
  sigaddset(&s, SIGTERM);
  return s;
}
std::mutex mu;
pthread_t waiter;
bool waiting = false, woken = false;
}  // namespace

void StopSignal::block() {
  const sigset_t s = stop_set();
  pthread_sigmask(SIG_BLOCK, &s, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
}
void StopSignal::wait() {
  {
    std::lock_guard<std::mutex> lock(mu);
    if (woken) return;
    waiter = pthread_self();
    waiting = true;
  }
  const sigset_t s = stop_set();
  int sig = 0;
  sigwait(&s, &sig);
}
// To the waiting thread only (a process-directed signal could reach a thread that does not block
// it): blocked there, so it stays pending for its sigwait, or is ignored once that has returned.
void StopSignal::wake() {
  std::lock_guard<std::mutex> lock(mu);
  woken = true;
  if (waiting) pthread_kill(waiter, SIGTERM);
}

}  // namespace ml::server
#endif
