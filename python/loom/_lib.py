"""libloom.so's functions and structs, declared for ctypes as include/loom/loom.h declares them."""
import ctypes
import ctypes.util
import os

ABI_VERSION = 1  # LOOM_ABI_VERSION these declarations match

c_token = ctypes.c_int32
c_pos = ctypes.c_int32
c_seq = ctypes.c_int32


class ModelParams(ctypes.Structure):
    _fields_ = [("repack", ctypes.c_bool), ("progress", ctypes.c_bool)]


class ContextParams(ctypes.Structure):
    _fields_ = [
        ("n_ctx", ctypes.c_uint32),
        ("n_batch", ctypes.c_uint32),
        ("n_ubatch", ctypes.c_uint32),
        ("n_seq_max", ctypes.c_uint32),
        ("n_threads", ctypes.c_int32),
        ("flash_attn", ctypes.c_bool),
        ("kv_unified", ctypes.c_bool),
        ("embeddings", ctypes.c_bool),
        ("type_k", ctypes.c_char_p),
        ("type_v", ctypes.c_char_p),
    ]


class Batch(ctypes.Structure):
    _fields_ = [
        ("n_tokens", ctypes.c_int32),
        ("token", ctypes.POINTER(c_token)),
        ("embd", ctypes.POINTER(ctypes.c_float)),
        ("pos", ctypes.POINTER(c_pos)),
        ("seq_id", ctypes.POINTER(c_seq)),
        ("logits", ctypes.POINTER(ctypes.c_int8)),
    ]


class SamplerParams(ctypes.Structure):
    _fields_ = [
        ("temperature", ctypes.c_float),
        ("top_k", ctypes.c_int32),
        ("top_p", ctypes.c_float),
        ("min_p", ctypes.c_float),
        ("typical_p", ctypes.c_float),
        ("repeat_penalty", ctypes.c_float),
        ("frequency_penalty", ctypes.c_float),
        ("presence_penalty", ctypes.c_float),
        ("penalty_last_n", ctypes.c_int32),
        ("seed", ctypes.c_uint64),
    ]


class ChatMessage(ctypes.Structure):
    _fields_ = [("role", ctypes.c_char_p), ("content", ctypes.c_char_p)]


P = ctypes.c_void_p
_SIGNATURES = {
    "loom_abi_version": (ctypes.c_int32, []),
    "loom_last_error": (ctypes.c_char_p, []),
    "loom_model_default_params": (ModelParams, []),
    "loom_model_load": (P, [ctypes.c_char_p, ModelParams]),
    "loom_model_free": (None, [P]),
    "loom_model_arch": (ctypes.c_char_p, [P]),
    "loom_model_n_vocab": (ctypes.c_int32, [P]),
    "loom_model_n_embd": (ctypes.c_int32, [P]),
    "loom_model_n_layer": (ctypes.c_int32, [P]),
    "loom_model_n_ctx_train": (ctypes.c_int32, [P]),
    "loom_context_default_params": (ContextParams, []),
    "loom_context_new": (P, [P, ContextParams]),
    "loom_context_free": (None, [P]),
    "loom_n_ctx": (ctypes.c_uint32, [P]),
    "loom_decode": (ctypes.c_int32, [P, Batch]),
    "loom_n_outputs": (ctypes.c_int32, [P]),
    "loom_get_logits_ith": (ctypes.POINTER(ctypes.c_float), [P, ctypes.c_int32]),
    "loom_get_embeddings_ith": (ctypes.POINTER(ctypes.c_float), [P, ctypes.c_int32]),
    "loom_tokenize": (ctypes.c_int32, [P, ctypes.c_char_p, ctypes.c_int32,
                                       ctypes.POINTER(c_token), ctypes.c_int32, ctypes.c_bool,
                                       ctypes.c_bool]),
    "loom_token_to_piece": (ctypes.c_int32, [P, c_token, ctypes.c_char_p, ctypes.c_int32,
                                             ctypes.c_bool]),
    "loom_detokenize": (ctypes.c_int32, [P, ctypes.POINTER(c_token), ctypes.c_int32,
                                         ctypes.c_char_p, ctypes.c_int32, ctypes.c_bool]),
    "loom_token_bos": (c_token, [P]),
    "loom_token_eos": (c_token, [P]),
    "loom_token_is_eog": (ctypes.c_bool, [P, c_token]),
    "loom_memory_clear": (None, [P]),
    "loom_seq_rm": (ctypes.c_bool, [P, c_seq, c_pos, c_pos]),
    "loom_seq_pos_max": (c_pos, [P, c_seq]),
    "loom_sampler_default_params": (SamplerParams, []),
    "loom_sampler_new": (P, [SamplerParams]),
    "loom_sampler_free": (None, [P]),
    "loom_sampler_sample": (c_token, [P, P, ctypes.c_int32]),
    "loom_sampler_accept": (None, [P, c_token]),
    "loom_chat_apply_template": (ctypes.c_int32, [P, ctypes.c_char_p, ctypes.POINTER(ChatMessage),
                                                  ctypes.c_size_t, ctypes.c_bool, ctypes.c_char_p,
                                                  ctypes.c_int32]),
}


def load():
    """The library with every function declared; OSError when it cannot be found."""
    path = os.environ.get("LOOM_LIBRARY") or ctypes.util.find_library("loom")
    if path is None:
        raise OSError("libloom.so not found: run `make install`, or set LOOM_LIBRARY to its path")
    lib = ctypes.CDLL(path)
    for name, (restype, argtypes) in _SIGNATURES.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    if lib.loom_abi_version() != ABI_VERSION:
        raise OSError(f"{path}: ABI version {lib.loom_abi_version()}, these bindings need "
                      f"{ABI_VERSION}")
    return lib
