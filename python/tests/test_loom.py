"""The Python module against llama.cpp's fixture for stories260K (../shared/fixtures): tokens,
every position's logits, a greedy run; and the errors bad input gets."""
import json
import math
import os
from array import array
from pathlib import Path

import pytest

import loom

FIXTURES = Path(os.environ.get("LOOM_FIXTURES",
                               Path(__file__).resolve().parents[3] / "shared" / "fixtures"))


@pytest.fixture(scope="module")
def case():
    path = FIXTURES / "stories260K" / "case.json"
    if not path.exists():
        pytest.fail(f"missing fixture {path}: the tests need ../shared beside the repository")
    c = json.loads(path.read_text())
    c["model_path"] = str((path.parent / c["model"]).resolve())
    return c


@pytest.fixture(scope="module")
def model(case):
    with loom.Model(case["model_path"]) as m:
        yield m


def test_describes_the_model(model, case):
    assert model.arch == case["arch"]
    assert model.n_vocab == case["n_vocab"]
    assert model.n_embd == case["hparams"]["embedding_length"]
    assert model.n_layer == case["hparams"]["block_count"]


def test_tokenizes_as_llama_cpp(model, case):
    tokens = model.tokenize(case["prompt_text"])
    assert tokens == case["tokens"]
    assert tokens[0] == model.bos
    assert model.tokenize(case["prompt_text"], add_special=False) == case["tokens"][1:]
    # Detokenizing gives the text back (the vocabulary adds a space prefix it then drops when
    # the list does not start with BOS, as llama_detokenize).
    assert model.detokenize(tokens[1:]) == case["prompt_text"]
    assert model.detokenize(tokens) == " " + case["prompt_text"]


def test_logits_match_llama_cpp_at_every_position(model, case):
    want = array("f")
    with open(FIXTURES / "stories260K" / case["logits_file"], "rb") as f:
        want.frombytes(f.read())
    n_vocab = case["n_vocab"]
    with loom.Context(model, n_ctx=256, kv_type="f32", n_threads=2) as ctx:
        ctx.decode(case["tokens"], all_logits=True)
        assert ctx.n_outputs == len(case["tokens"])
        err = ref = 0.0
        for i in range(ctx.n_outputs):
            got = ctx.logits(i)
            assert len(got) == n_vocab
            for g, w in zip(got, want[i * n_vocab:(i + 1) * n_vocab]):
                err += (g - w) ** 2
                ref += w * w
        assert err / ref < 1e-10
        assert max(range(n_vocab), key=ctx.logits(-1).__getitem__) == case["logits_argmax"][-1]


def test_greedy_generation_matches_llama_cpp(model, case):
    greedy = case["greedy"]
    text = model.generate(case["prompt_text"], max_tokens=greedy["n"], temperature=0,
                          n_ctx=256, kv_type="f32")
    assert text == greedy["text"]


def test_seeded_sampling_repeats(model, case):
    a = model.generate("Once upon a time", max_tokens=24, temperature=1.0, seed=7)
    b = model.generate("Once upon a time", max_tokens=24, temperature=1.0, seed=7)
    assert a == b and len(a) > 0


def test_sequence_operations(model, case):
    with loom.Context(model, n_ctx=256) as ctx:
        ctx.decode(case["tokens"])
        assert ctx.seq_pos_max() == len(case["tokens"]) - 1
        ctx.seq_rm(0, 5, -1)
        assert ctx.seq_pos_max() == 4
        ctx.clear()
        assert ctx.seq_pos_max() == -1
        with pytest.raises(loom.LoomError, match="9"):
            ctx.seq_rm(9)


def test_embeddings(model, case):
    with loom.Context(model, n_ctx=256, embeddings=True) as ctx:
        ctx.decode(case["tokens"])
        e = ctx.embeddings()
        assert len(e) == model.n_embd
        assert all(math.isfinite(x) for x in e) and any(x != 0 for x in e)
    with loom.Context(model, n_ctx=256) as ctx:
        ctx.decode(case["tokens"])
        with pytest.raises(loom.LoomError, match="embeddings"):
            ctx.embeddings()


def test_chat_prompt(model):
    prompt = model.chat_prompt([{"role": "user", "content": "Hi"}], template="chatml")
    assert prompt == "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
    with pytest.raises(loom.LoomError, match="no-such"):
        model.chat_prompt([{"role": "user", "content": "Hi"}], template="no-such")


def test_errors_name_the_problem(model, tmp_path):
    with pytest.raises(loom.LoomError, match="missing.gguf"):
        loom.Model(tmp_path / "missing.gguf")
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF\x03\x00\x00\x00" + b"\xff" * 32)
    with pytest.raises(loom.LoomError, match=r"\[gguf\]"):
        loom.Model(bad)
    with loom.Context(model, n_ctx=64) as ctx:
        with pytest.raises(loom.LoomError, match="decode"):
            ctx.decode([model.n_vocab + 3])
        assert ctx.seq_pos_max() == -1
        with pytest.raises(loom.LoomError):
            ctx.logits(0)
    with pytest.raises(loom.LoomError, match="q9_9"):
        loom.Context(model, kv_type="q9_9")
