#!/bin/sh
# Fake nvidia-cuda-mps-control for tests: logs what it gets; the "daemon" is a sleep.
pidf="$CUDA_MPS_PIPE_DIRECTORY/fake-daemon.pid"
alive() {
  pid=$(cat "$pidf" 2>/dev/null) || return 1
  st=$(awk '{print $3}' /proc/$pid/stat 2>/dev/null)
  [ -n "$st" ] && [ "$st" != Z ]
}
if [ "$1" = "-d" ]; then
  echo "$CUDA_MPS_PIPE_DIRECTORY -d visible=$CUDA_VISIBLE_DEVICES log=$CUDA_MPS_LOG_DIRECTORY" >> "$FAKE_MPS_LOG"
  sleep 1000 </dev/null >/dev/null 2>&1 &
  echo $! > "$pidf"
  exit 0
fi
read cmd
echo "$CUDA_MPS_PIPE_DIRECTORY $cmd" >> "$FAKE_MPS_LOG"
if ! alive; then echo "Cannot find MPS control daemon process" >&2; exit 1; fi
case "$cmd" in
  quit) kill "$(cat "$pidf")"; rm -f "$pidf" ;;
esac
exit 0
