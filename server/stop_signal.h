// The server's stop request: SIGINT/SIGTERM on POSIX, the console's Ctrl-C / Ctrl-Break / close on
// Windows (SetConsoleCtrlHandler; under Wine a SIGINT to the process arrives as Ctrl-C).
//
// Contract: block() first, on the main thread before any other thread starts (POSIX: the two signals
// are blocked so that only wait() takes them; threads started later inherit the mask. Both: a broken
// connection is an error return, never a process-ending SIGPIPE). Then one thread calls wait(), which
// returns once a stop was requested or wake() was called (from any thread, any number of times).
#pragma once

namespace ml::server {

class StopSignal {
 public:
  void block();
  void wait();
  void wake();
};

}  // namespace ml::server
