"""Starts `tg-llm --serve 0` on a model and stops it; used by the server's end-to-end suites.

TG_LLM is the tg-llm binary, TG_LLM_WORK a scratch directory (ctest sets both). The scripted model
(gen_scripted_model.py) is written there once.
"""
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
TG_LLM = os.environ.get("TG_LLM", os.path.join(HERE, "..", "..", "..", "build", "bin", "tg-llm"))
WORK = os.environ.get("TG_LLM_WORK") or tempfile.mkdtemp(prefix="tg-llm-server-")


def scripted_model(variant=""):
    """gen_scripted_model.py's model ("wrong", "other-vocab": its draft-model variants)."""
    os.makedirs(WORK, exist_ok=True)
    path = os.path.join(WORK, f"scripted{'-' + variant if variant else ''}.gguf")
    if not os.path.exists(path):
        tmp = f"{path}.{os.getpid()}.tmp"  # suites run in parallel: each writes its own, the rename is atomic
        subprocess.run([sys.executable, os.path.join(HERE, "gen_scripted_model.py"), tmp, *([variant] if variant else [])], check=True)
        os.replace(tmp, path)
    return path


def generated_model(name, generator, *args):
    """WORK/name, written once by tests/llm/GENERATOR with args (suites run in parallel: each writes its own copy,
    the rename is atomic)."""
    os.makedirs(WORK, exist_ok=True)
    path = os.path.join(WORK, name)
    if not os.path.exists(path):
        tmp = f"{path}.{os.getpid()}.tmp"
        subprocess.run([sys.executable, os.path.join(HERE, "..", generator), tmp, *args], check=True, capture_output=True)
        os.replace(tmp, path)
    return path


def installed_model(name):
    """Path of a model scripts/setup.sh installed ("gemma" or "smollm")."""
    out = subprocess.run([sys.executable, os.path.join(HERE, "..", "model_paths.py"), name], check=True,
                         capture_output=True, text=True)
    return out.stdout.strip()


class Server:
    """A running tg-llm --serve; `log` collects its stderr lines."""

    def __init__(self, model, *args, ready_timeout=300, launcher=(), env=None):
        """`launcher`: the command tg-llm runs under (mpirun -np 2); `env`: more environment variables."""
        self.key = args[list(args).index("--api-key") + 1] if "--api-key" in args else None
        self.log = []
        self._cond = threading.Condition()
        self.proc = subprocess.Popen([*launcher, TG_LLM, "--model", model, "--serve", "0", *args], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True, errors="replace", env={**os.environ, **(env or {})})
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        line = self.wait_for(r"ready: http://([0-9.]+):(\d+)/", ready_timeout)
        m = re.search(r"ready: http://([0-9.]+):(\d+)/", line)
        self.url = f"http://{m.group(1)}:{m.group(2)}"

    def _read(self):
        for line in self.proc.stderr:
            with self._cond:
                self.log.append(line.rstrip("\n"))
                self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    def wait_for(self, pattern, timeout=60, start=0):
        """The first log line from index `start` matching `pattern`; fails after `timeout` s or if tg-llm exits."""
        deadline = time.time() + timeout
        with self._cond:
            while True:
                for line in self.log[start:]:
                    if re.search(pattern, line):
                        return line
                if self.proc.poll() is not None:
                    raise AssertionError(f"tg-llm exited ({self.proc.returncode}); log:\n" + "\n".join(self.log))
                left = deadline - time.time()
                if left <= 0:
                    raise AssertionError(f"no log line matching {pattern!r} in {timeout} s; log:\n" + "\n".join(self.log))
                self._cond.wait(min(left, 0.5))

    def request_lines(self, start=0, at_least=0, timeout=30):
        """The request lines logged from index `start`, once there are `at_least` of them (tg-llm's stderr is read
        by a thread: a line written as a reply went out may not be here yet); fails after `timeout` s."""
        deadline = time.time() + timeout
        with self._cond:
            while True:
                lines = [l for l in self.log[start:] if re.match(r"tg-llm: request \d+", l)]
                if len(lines) >= at_least:
                    return lines
                left = deadline - time.time()
                if left <= 0 or self.proc.poll() is not None:
                    raise AssertionError(f"{len(lines)} request lines, not {at_least}; log:\n" + "\n".join(self.log))
                self._cond.wait(min(left, 0.5))

    def metrics(self):
        req = urllib.request.Request(self.url + "/metrics", headers={"Authorization": f"Bearer {self.key}"} if self.key else {})
        text = urllib.request.urlopen(req, timeout=10).read().decode()
        return {k: int(v) for k, v in re.findall(r"^tg_llm_(\w+) (\d+)$", text, re.M)}

    def rss_kb(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._reader.join(10)
        self.proc.stderr.close()
        return self.proc.returncode
