"""Starts N rank processes of a program as torchrun would (RANK, WORLD_SIZE, LOCAL_RANK,
MASTER_ADDR, MASTER_PORT), prints their output with a "[rank R]" prefix as it comes, and
bounds the whole run. Unlike torchrun it does not stop the other ranks when one dies, which is
what the fault scenarios test:

    python spawn.py --nproc 2 --share-gpu --expect-killed 1 -- ranks.py kill

Exit status 0 when every rank exited 0 (the --expect-killed rank: by SIGKILL), no rank printed a
FAIL line and every rank that lived printed a PASS line; else 1."""

import argparse
import os
import signal
import socket
import subprocess
import sys
import threading
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nproc", type=int, required=True)
    parser.add_argument("--share-gpu", action="store_true", help="COLLC_SHARE_GPU=1 for every rank")
    parser.add_argument("--expect-killed", type=int, default=-1, metavar="RANK",
                        help="this rank is expected to end by SIGKILL")
    parser.add_argument("--timeout", type=float, default=300, help="seconds for the whole run")
    parser.add_argument("program", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    program = args.program[1:] if args.program[:1] == ["--"] else args.program
    if not program:
        parser.error("no program given")

    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()),
               WORLD_SIZE=str(args.nproc), LOCAL_WORLD_SIZE=str(args.nproc))
    if args.share_gpu:
        env["COLLC_SHARE_GPU"] = "1"
    children, readers = [], []
    verdicts = {r: {"PASS": 0, "FAIL": 0} for r in range(args.nproc)}
    lock = threading.Lock()

    def read(rank, pipe):
        for raw in pipe:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            with lock:
                for word in ("PASS", "FAIL"):
                    if f"] {word} " in line:
                        verdicts[rank][word] += 1
                print(line if line.startswith("[rank ") else f"[rank {rank}] {line}", flush=True)

    for rank in range(args.nproc):
        child_env = dict(env, RANK=str(rank), LOCAL_RANK=str(rank))
        child = subprocess.Popen([sys.executable] + program, env=child_env,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 start_new_session=True)
        children.append(child)
        reader = threading.Thread(target=read, args=(rank, child.stdout), daemon=True)
        reader.start()
        readers.append(reader)

    deadline = time.monotonic() + args.timeout
    timed_out = False
    while any(c.poll() is None for c in children):
        if time.monotonic() > deadline:
            timed_out = True
            for c in children:
                if c.poll() is None:
                    os.killpg(c.pid, signal.SIGKILL)
            break
        time.sleep(0.1)
    for c in children:
        c.wait()
    for reader in readers:
        reader.join(timeout=5)

    ok = not timed_out
    for rank, child in enumerate(children):
        killed = rank == args.expect_killed
        expected = -signal.SIGKILL if killed else 0
        fine = child.returncode == expected and verdicts[rank]["FAIL"] == 0 and (
            killed or verdicts[rank]["PASS"] > 0)
        if not fine:
            print(f"spawn: rank {rank} exited {child.returncode} (expected {expected}), "
                  f"{verdicts[rank]['PASS']} PASS and {verdicts[rank]['FAIL']} FAIL lines",
                  flush=True)
        ok = ok and fine
    if timed_out:
        print(f"spawn: stopped after {args.timeout:g} s: a rank did not finish", flush=True)
    print(f"spawn: {'ok' if ok else 'FAILED'} ({args.nproc} ranks: {' '.join(program)})",
          flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
