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
# - If a run fails and Wine's client printed that message, the program never ran: it is started
#   again, at most twice, saying so on stderr. Any other failure is the program's and is returned
#   as it is, with its exit code and its output unchanged.
wine=${ML_WINE:-/usr/lib/wine/wine64}
server=${ML_WINESERVER:-/usr/lib/wine/wineserver}
export WINEDEBUG=${WINEDEBUG:--all}
prefix=${WINEPREFIX:-$HOME/.wine}
err=$(mktemp "${TMPDIR:-/tmp}/wine_run.XXXXXX") || exit 70
trap 'rm -f "$err"' EXIT
attempt=1
while :; do
  [ -f "$prefix/system.reg" ] && "$server" -p60 >/dev/null 2>&1
  "$wine" "$@" 2> >(tee "$err" >&2)
  rc=$?
  wait $!  # tee has written everything
  if [ "$rc" -ne 0 ] && [ "$attempt" -lt 3 ] && grep -q "^wine client error:" "$err"; then
    echo "wine_run.sh: Wine's client lost its wineserver (above), so $1 did not run; starting it again" >&2
    attempt=$((attempt + 1))
    sleep 1
    continue
  fi
  exit "$rc"
done
