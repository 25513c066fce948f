"""traces/capture.py's decode step puts the KV cache back to its prefilled tensors after
every call (session 49). A cache's update concatenates into a new tensor; a crop left the
cache holding a view of the step's own result, so a CUDA graph captured from the step read,
on every replay, tensors the capture's step had dropped and PyTorch had handed to whatever
ran next. Here a cache shaped as transformers keeps it (per-layer objects, or the older
key/value lists) goes through steps that replace its tensors, and after each the cache must
hold the very prefilled objects again (no torch needed: identity is the property)."""
import ast
import types
from pathlib import Path

CAPTURE = Path(__file__).resolve().parents[2] / "traces" / "capture.py"


def capture_functions(*names):
    tree = ast.parse(CAPTURE.read_text())
    body = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in names]
    assert len(body) == len(names), names
    ns = {}
    exec(compile(ast.Module(body=body, type_ignores=[]), str(CAPTURE), "exec"), ns)
    return types.SimpleNamespace(**{n: ns[n] for n in names})


class Tensor:
    """A stand-in tensor: a length along the sequence, and an identity."""

    def __init__(self, length):
        self.length = length


class Layer:
    """transformers' DynamicLayer: `update` concatenates into a new tensor."""

    def __init__(self, length):
        self.keys, self.values, self.is_initialized = Tensor(length), Tensor(length), True

    def update(self, n):
        self.keys = Tensor(self.keys.length + n)
        self.values = Tensor(self.values.length + n)


class LayeredCache:
    def __init__(self, layers, length):
        self.layers = [Layer(length) for _ in range(layers)]

    def step(self):
        for layer in self.layers:
            layer.update(1)

    def get_seq_length(self):
        return self.layers[0].keys.length


class ListCache:
    """The older layout: key and value lists on the cache, and a counter."""

    def __init__(self, layers, length):
        self.key_cache = [Tensor(length) for _ in range(layers)]
        self.value_cache = [Tensor(length) for _ in range(layers)]
        self._seen_tokens = length

    def step(self):
        self.key_cache = [Tensor(k.length + 1) for k in self.key_cache]
        self.value_cache[0] = Tensor(self.value_cache[0].length + 1)
        self._seen_tokens += 1

    def get_seq_length(self):
        return self.key_cache[0].length


def test_every_step_finds_the_prefilled_tensors_again():
    f = capture_functions("cache_state", "restore_cache")
    for make in (lambda: LayeredCache(4, 256), lambda: ListCache(4, 256)):
        cache = make()
        tensors = lambda c: [id(t) for t in getattr(c, "key_cache", [])] + [
            id(t) for t in getattr(c, "value_cache", [])] + [
            id(x) for layer in getattr(c, "layers", []) for x in (layer.keys, layer.values)]
        prefilled = tensors(cache)
        state = f.cache_state(cache)
        for _ in range(3):
            cache.step()
            assert tensors(cache) != prefilled, "the step replaced the cache's tensors"
            f.restore_cache(cache, state)
            assert tensors(cache) == prefilled
            assert cache.get_seq_length() == 256
        assert getattr(cache, "_seen_tokens", 256) == 256


def test_the_decode_step_restores_rather_than_crops():
    # The step itself (torch and transformers on the GPU machine): it restores, and no
    # longer crops, after the model's call.
    tree = ast.parse(CAPTURE.read_text())
    step = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "decode_step")
    src = ast.unparse(step)
    assert "restore_cache(cache, prefilled)" in src
    assert ".crop(" not in src
