"""collc.World and collc.Instance: symmetric memory over the ranks' GPUs, and a compiled
collective made ready in it. Pointers and streams are plain integers (a tensor's data_ptr(), a
torch.cuda.Stream's cuda_stream), so this layer needs no torch."""

import ctypes

from ._errors import Error


def _check_int(value, what, minimum=0):
    if not isinstance(value, int) or value < minimum:
        raise Error(f"{what} must be an integer >= {minimum}, not {value!r}")
    return value


class World:
    """Ranks and their symmetric heaps. Make one with World.local, World.shared_gpu or
    World.process; close() (or garbage collection) frees it once no instance uses it."""

    def __init__(self, handle, keepalive=None):
        self._handle = handle
        self._keepalive = keepalive  # the bootstrap callback must outlive the C call
        from . import _capi
        nranks, heap = ctypes.c_int(), ctypes.c_uint64()
        _capi.call("collc_world_nranks", handle, ctypes.byref(nranks))
        _capi.call("collc_world_heap_bytes", handle, ctypes.byref(heap))
        self.nranks = nranks.value
        self.heap_bytes = heap.value

    @classmethod
    def local(cls, devices, heap_bytes=0):
        """This process drives rank r on GPU devices[r] (peer access between all of them)."""
        from . import _capi
        devices = [_check_int(d, "a device") for d in devices]
        array = (ctypes.c_int * len(devices))(*devices)
        handle = ctypes.c_void_p()
        _capi.call("collc_world_create_local", array, len(devices),
                   _check_int(heap_bytes, "heap_bytes"), ctypes.byref(handle))
        return cls(handle)

    @classmethod
    def shared_gpu(cls, nranks, device=0, heap_bytes=0):
        """`nranks` ranks as co-resident kernels on one GPU: for correctness only, its timings
        mean nothing (the ranks share the GPU's multiprocessors and memory)."""
        from . import _capi
        handle = ctypes.c_void_p()
        _capi.call("collc_world_create_shared_gpu", _check_int(device, "device"),
                   _check_int(nranks, "nranks", 1), _check_int(heap_bytes, "heap_bytes"),
                   ctypes.byref(handle))
        return cls(handle)

    @classmethod
    def process(cls, rank, nranks, device, allgather, heap_bytes=0, share_gpu=False,
                check_calls=False):
        """This process is `rank` of `nranks`, on GPU `device`. `allgather(data: bytes) -> list of
        bytes` (every rank's, in rank order) is the caller's own exchange, e.g. through
        torch.distributed; it is called collectively while the world is made.

        share_gpu=True lets ranks share a GPU, for correctness only: the processes' contexts are
        time-sliced, so each flag exchange waits for a time slice (about 2.3 ms on an H200); such
        a world needs no NCCL and all its ranks must be on one host. check_calls=True is the
        checking mode: every launch first compares its collective and count with every rank's
        (a host exchange per launch) and fails on all ranks, naming each rank's call, where they
        differ. Every rank must pass the same values."""
        from . import _capi
        if not isinstance(share_gpu, bool) or not isinstance(check_calls, bool):
            raise Error(f"share_gpu and check_calls must be True or False, not {share_gpu!r} "
                        f"and {check_calls!r}")
        flags = ((_capi.WORLD_SHARE_GPU if share_gpu else 0) |
                 (_capi.WORLD_CHECK_CALLS if check_calls else 0))
        failures = []

        def exchange(send, recv, nbytes, _user):
            try:
                gathered = allgather(ctypes.string_at(send, nbytes))
                joined = b"".join(gathered)
                if len(gathered) != nranks or len(joined) != nbytes * nranks:
                    raise Error(f"the all-gather returned {len(gathered)} parts of "
                                f"{len(joined)} bytes; expected {nranks} of {nbytes}")
                ctypes.memmove(recv, joined, len(joined))
                return 0
            except BaseException as error:  # never let an exception cross the C frames
                failures.append(error)
                return 1

        callback = _capi.ALLGATHER_FN(exchange)
        handle = ctypes.c_void_p()
        try:
            _capi.call("collc_world_create_process_flags", _check_int(rank, "rank"),
                       _check_int(nranks, "nranks", 1), _check_int(device, "device"),
                       _check_int(heap_bytes, "heap_bytes"), flags, callback, None,
                       ctypes.byref(handle))
        except Error as error:
            if failures:
                raise Error(f"{error} (the all-gather raised: {failures[0]!r})",
                            error.status) from failures[0]
            raise
        return cls(handle, keepalive=callback)

    @property
    def handle(self):
        if self._handle is None:
            raise Error("this world was closed")
        return self._handle

    def close(self):
        if self._handle is not None:
            from . import _capi
            _capi.call("collc_world_destroy", self._handle)
            self._handle = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


class Instance:
    """A compiled collective ready in a world for calls of up to max_count elements."""

    def __init__(self, world, compiled, max_count):
        from . import _capi
        self.world = world  # kept alive: the instance uses the world's heap
        self.compiled = compiled
        self.max_count = _check_int(max_count, "max_count", 1)
        handle = ctypes.c_void_p()
        _capi.call("collc_instance_create", world.handle, compiled.handle, max_count,
                   ctypes.byref(handle))
        self._handle = handle

    def launch(self, rank, inp, out, count, stream=0, aux=()):
        """Enqueues rank's part of one call on `stream` (0: the world's stream of that rank).
        inp, out and aux are device addresses (ints). in == out only where compiled.in_place."""
        from . import _capi
        aux = list(aux)
        array = (ctypes.c_void_p * len(aux))(*aux) if aux else None
        _capi.call("collc_launch", self._require(), _check_int(rank, "rank"), inp, out, array,
                   len(aux), _check_int(count, "count"), stream or None)

    def synchronize(self, stream=0):
        """Waits (bounded) for `stream` (an int cudaStream_t; 0: the world's streams) and reports
        a rank the watchdog caught, naming the peer it waited for and any peer process that
        exited."""
        from . import _capi
        if stream:
            streams = (ctypes.c_void_p * 1)(stream)
            _capi.call("collc_instance_synchronize", self._require(), streams, 1)
        else:
            _capi.call("collc_instance_synchronize", self._require(), None, 0)

    def _require(self):
        if self._handle is None:
            raise Error("this instance was closed")
        return self._handle

    def close(self):
        if self._handle is not None:
            from . import _capi
            _capi.call("collc_instance_destroy", self._handle)
            self._handle = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
