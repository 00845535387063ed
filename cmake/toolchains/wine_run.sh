#!/bin/bash
# wine_run.sh PROGRAM.exe [ARGS...]: runs one Windows program under Wine 8 (Debian's wine64). It is
# CMAKE_CROSSCOMPILING_EMULATOR of the win-* presets (tools/gen_presets.py), so ctest and the Python
# drivers start every .exe through it (docs/windows.md). It adds two things to a bare `wine64`:
#
# - The wineserver outlives the gaps between tests. The first Wine process starts a server that, by
#   default, exits 3 s after the last process of the prefix; a process connecting while it shuts
#   down dies before the program's first instruction with "wine client error:0: recvmsg:
#   Connection reset by peer" (seen once on CI: e2e.threads of win-avx512vnni failed so in 0.02 s
#   while the other Windows preset shared the prefix). Once the prefix exists, a server is started
#   here that stays 60 s after the last process (`wineserver -p60`; when one is running already,
#   it exits with 2 and nothing changes).
# - Wine's service processes (services.exe, winedevice.exe, ...), started by the first process of a
#   server, live as long as the server and inherit that process's stdout and stderr: a test that
#   happened to start them kept ctest waiting for its output until the server exited (60 s after
#   the last process of all three Windows presets: win-sse2's quant group "took" 180 s on CI). So
#   whoever starts the server starts them too, with /dev/null for every stream (`cmd /c exit`,
#   0.5 s), under a lock on the prefix, before any program runs.
# - If a run fails and Wine's client printed that message, the program never ran: it is started
#   again, at most twice, saying so on stderr. Any other failure is the program's and is returned
#   as it is, with its exit code and its output unchanged.
# - SIGTERM or SIGINT sent to this script is passed on to the program as a SIGINT, which Wine
#   delivers as Ctrl-C (CTRL_C_EVENT): a test stops ml_server.exe as it stops ml_server on Linux.
wine=${ML_WINE:-/usr/lib/wine/wine64}
server=${ML_WINESERVER:-/usr/lib/wine/wineserver}
export WINEDEBUG=${WINEDEBUG:--all}
prefix=${WINEPREFIX:-$HOME/.wine}
err=$(mktemp "${TMPDIR:-/tmp}/wine_run.XXXXXX") || exit 70
trap 'rm -f "$err"' EXIT
attempt=1
# SIGTERM/SIGINT to this script reach the program as Ctrl-C (Wine turns a SIGINT into CTRL_C_EVENT
# for the console control handlers: ml_server.exe stops cleanly, server/stop_signal.cc); the program
# runs in the background so that the trap can run, on this script's stdin (fd 4: a background job
# would otherwise read /dev/null).
{ exec 4<&0; } 2>/dev/null || exec 4</dev/null  # stdin closed: the program reads /dev/null
child=
trap '[ -n "$child" ] && kill -INT "$child" 2>/dev/null' TERM INT
start_server() {
  [ -f "$prefix/system.reg" ] || return 0  # no prefix yet: this first process creates it (wine.prefix)
  exec 9>>"$prefix/.wine_run.lock"
  flock 9
  if "$server" -p60 >/dev/null 2>&1 9>&-; then  # 0: this call started the server (it must not hold the lock)
    "$wine" cmd /c exit </dev/null >/dev/null 2>&1 9>&-
  fi
  exec 9>&-
}
while :; do
  start_server
  exec 3> >(tee "$err" >&2)
  teepid=$!
  "$wine" "$@" <&4 2>&3 3>&- 4<&- &
  child=$!
  exec 3>&-
  wait "$child"
  rc=$?
  while kill -0 "$child" 2>/dev/null; do  # a trapped signal interrupted the wait: wait on
    wait "$child"
    rc=$?
  done
  wait "$teepid"  # tee has written everything
  if [ "$rc" -ne 0 ] && [ "$attempt" -lt 3 ] && grep -q "^wine client error:" "$err"; then
    echo "wine_run.sh: Wine's client lost its wineserver (above), so $1 did not run; starting it again" >&2
    attempt=$((attempt + 1))
    sleep 1
    continue
  fi
  exit "$rc"
done
