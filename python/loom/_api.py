"""Model, Context and Sampler: Python objects that own their C handles."""
import ctypes
from array import array

from . import _lib

_LIB = None


def lib():
    global _LIB
    if _LIB is None:
        _LIB = _lib.load()
    return _LIB


class LoomError(RuntimeError):
    """A failure reported by libloom, with its message (e.g. "[gguf] x.gguf: ...")."""


def _error(what):
    return LoomError(f"{what}: {lib().loom_last_error().decode(errors='replace')}")


def _tokens(ids):
    ids = list(ids)
    return (_lib.c_token * max(1, len(ids)))(*ids), len(ids)


class _Owned:
    """An object holding a C handle, freed by close() (or `with`, or when collected)."""

    _free = None  # the name of the library function that frees the handle

    def close(self):
        if getattr(self, "_handle", None):
            getattr(lib(), self._free)(self._handle)
            self._handle = None

    def __del__(self):
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Model(_Owned):
    """A GGUF model. `repack` copies the matrices into the CPU kernels' layout (faster decode)."""

    _free = "loom_model_free"

    def __init__(self, path, repack=True):
        params = lib().loom_model_default_params()
        params.repack = repack
        self._handle = lib().loom_model_load(str(path).encode(), params)
        if not self._handle:
            raise _error(f"cannot load {path}")
        self.arch = lib().loom_model_arch(self._handle).decode()
        self.n_vocab = lib().loom_model_n_vocab(self._handle)
        self.n_embd = lib().loom_model_n_embd(self._handle)
        self.n_layer = lib().loom_model_n_layer(self._handle)
        self.n_ctx_train = lib().loom_model_n_ctx_train(self._handle)
        self.bos = lib().loom_token_bos(self._handle)
        self.eos = lib().loom_token_eos(self._handle)

    def tokenize(self, text, add_special=True, parse_special=False):
        data = text.encode()
        n = len(data) + 8
        while True:
            out = (_lib.c_token * n)()
            got = lib().loom_tokenize(self._handle, data, len(data), out, n, add_special,
                                      parse_special)
            if got == -(2**31):
                raise _error("tokenize")
            if got >= 0:
                return list(out[:got])
            n = -got

    def detokenize(self, tokens, special=False):
        ids, count = _tokens(tokens)
        n = 16 * count + 16
        while True:
            buf = ctypes.create_string_buffer(n)
            got = lib().loom_detokenize(self._handle, ids, count, buf, n, special)
            if got == -(2**31):
                raise _error("detokenize")
            if got >= 0:
                return buf.raw[:got].decode(errors="replace")
            n = -got

    def token_piece(self, token, special=False):
        """The bytes one token stands for (a UTF-8 character may span several tokens)."""
        n = 32
        while True:
            buf = ctypes.create_string_buffer(n)
            got = lib().loom_token_to_piece(self._handle, token, buf, n, special)
            if got == -(2**31):
                raise _error(f"token {token}")
            if got >= 0:
                return buf.raw[:got]
            n = -got

    def is_eog(self, token):
        return bool(lib().loom_token_is_eog(self._handle, token))

    def chat_prompt(self, messages, template=None, add_assistant=True):
        """The prompt for [{"role": ..., "content": ...}, ...] in the model's template (or the
        built-in family `template`, e.g. "chatml")."""
        items = (_lib.ChatMessage * max(1, len(messages)))(
            *[_lib.ChatMessage(m["role"].encode(), m["content"].encode()) for m in messages])
        name = template.encode() if template else None
        n = lib().loom_chat_apply_template(self._handle, name, items, len(messages),
                                           add_assistant, None, 0)
        if n < 0:
            raise _error("chat template")
        buf = ctypes.create_string_buffer(n + 1)
        lib().loom_chat_apply_template(self._handle, name, items, len(messages), add_assistant,
                                       buf, n + 1)
        return buf.raw[:n].decode(errors="replace")

    def generate(self, prompt, max_tokens=128, temperature=0.8, top_k=40, top_p=0.95,
                 min_p=0.05, seed=None, n_ctx=None, n_threads=0, kv_type=None):
        """The text generated after `prompt`, up to max_tokens or an end-of-generation token.
        temperature 0 is greedy; a seed makes sampling repeatable."""
        tokens = self.tokenize(prompt)
        n_ctx = n_ctx or min(self.n_ctx_train, len(tokens) + max_tokens)
        with Context(self, n_ctx=n_ctx, n_threads=n_threads, kv_type=kv_type) as ctx:
            sampler = Sampler(temperature=temperature, top_k=top_k, top_p=top_p, min_p=min_p,
                              seed=seed)
            ctx.decode(tokens)
            out = []
            for _ in range(max_tokens):
                token = sampler.sample(ctx)
                if self.is_eog(token):
                    break
                sampler.accept(token)
                out.append(token)
                if len(tokens) + len(out) >= n_ctx:
                    break
                ctx.decode([token])
            # The pieces as a streaming program prints them: the first keeps its leading space,
            # which continues the prompt's text.
            return b"".join(self.token_piece(t) for t in out).decode(errors="replace")


class Context(_Owned):
    """A KV cache and decode state over a model (which must outlive it)."""

    _free = "loom_context_free"

    def __init__(self, model, n_ctx=4096, n_batch=2048, n_seq_max=1, n_threads=0,
                 flash_attn=False, kv_type=None, type_k=None, type_v=None, embeddings=False):
        """kv_type sets the KV cache's K and V types ("f16", "f32", "q8_0", ...); type_k and
        type_v set one each (all but f32 and f16 need flash_attn)."""
        params = lib().loom_context_default_params()
        params.n_ctx = n_ctx
        params.n_batch = n_batch
        params.n_ubatch = min(params.n_ubatch, n_batch)
        params.n_seq_max = n_seq_max
        params.n_threads = n_threads
        params.flash_attn = flash_attn
        params.embeddings = embeddings
        type_k, type_v = type_k or kv_type, type_v or kv_type
        params.type_k = type_k.encode() if type_k else None
        params.type_v = type_v.encode() if type_v else None
        self.model = model
        self._handle = lib().loom_context_new(model._handle, params)
        if not self._handle:
            raise _error("cannot make the context")
        self.n_ctx = lib().loom_n_ctx(self._handle)

    def decode(self, tokens, seq_id=0, all_logits=False):
        """Appends tokens to sequence seq_id; keeps the last token's logits, or every token's."""
        ids, n = _tokens(tokens)
        if n == 0:
            raise LoomError("decode: no tokens")
        batch = _lib.Batch(n_tokens=n, token=ids)
        seqs = (_lib.c_seq * n)(*([seq_id] * n))
        batch.seq_id = seqs
        if all_logits:
            flags = (ctypes.c_int8 * n)(*([1] * n))
            batch.logits = flags
        if lib().loom_decode(self._handle, batch) != 0:
            raise _error("decode")

    @property
    def n_outputs(self):
        return lib().loom_n_outputs(self._handle)

    def logits(self, i=-1):
        """Output i's logits (array of n_vocab floats); -1 is the last."""
        p = lib().loom_get_logits_ith(self._handle, i)
        if not p:
            raise _error(f"logits of output {i}")
        return array("f", p[:self.model.n_vocab])

    def embeddings(self, i=-1):
        """Output i's final hidden state (n_embd floats), for a context made with embeddings."""
        p = lib().loom_get_embeddings_ith(self._handle, i)
        if not p:
            raise _error(f"embeddings of output {i}")
        return array("f", p[:self.model.n_embd])

    def seq_rm(self, seq_id=0, p0=-1, p1=-1):
        if not lib().loom_seq_rm(self._handle, seq_id, p0, p1):
            raise _error("seq_rm")

    def seq_pos_max(self, seq_id=0):
        return lib().loom_seq_pos_max(self._handle, seq_id)

    def clear(self):
        lib().loom_memory_clear(self._handle)


class Sampler(_Owned):
    """llama.cpp's default sampling chain; temperature 0 is greedy."""

    _free = "loom_sampler_free"

    def __init__(self, temperature=0.8, top_k=40, top_p=0.95, min_p=0.05, repeat_penalty=1.0,
                 seed=None):
        params = lib().loom_sampler_default_params()
        params.temperature = temperature
        params.top_k = top_k
        params.top_p = top_p
        params.min_p = min_p
        params.repeat_penalty = repeat_penalty
        if seed is not None:
            params.seed = seed
        self._handle = lib().loom_sampler_new(params)
        if not self._handle:
            raise _error("cannot make the sampler")

    def sample(self, ctx, i=-1):
        token = lib().loom_sampler_sample(self._handle, ctx._handle, i)
        if token < 0:
            raise _error("sample")
        return token

    def accept(self, token):
        lib().loom_sampler_accept(self._handle, token)
