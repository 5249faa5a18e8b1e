#!/usr/bin/env python3
"""Writes a llama-architecture GGUF whose greedy continuation is a known script, for the server's tests.

The model is real (tg runs every layer of it) but built so its next token depends only on the last one: the
embedding is one-hot (d_model = vocab), attention and FFN outputs are zero (the residual stream passes through
unchanged), and output.weight maps each token to the one the script says follows it. The final RMS norm scales
a one-hot vector by sqrt(d_model), so the chosen successor wins by a logit margin of 3 * sqrt(384) ~ 59:
greedy and any sampling temperature below ~5 follow the script.

usage: gen_scripted_model.py OUT.gguf [VARIANT]

Variants, as draft models for speculative decoding (--draft-model):
  wrong        the same vocabulary, but every token is followed by "la" (guesses right about half the time on L)
  other-vocab  one token more than the scripted model's vocabulary

Scripts (the last prompt character picks one):
  H  -> "Hello, " "world!" </s>
  R  -> "<think>" "Let me think." "</think>" "The answer is 4." </s>   (a prompt ending in "<think>" joins at
                                                                        "Let me think.")
  T  -> "<tool_call>" '{"name": "get_weather", "arguments": {"city": "Paris"}}' "</tool_call>" </s>
  B  -> '<tool_call>{"name": oops' "</tool_call>" </s>                   (an unparsable tool call)
  L  -> "la" "le" "la" "le" ...                                          (never ends: the length limit)
  any other character -> "OK" </s>

Chat template: the messages' contents concatenated; tools' names first as "[tools: a,b]"; "<think>" appended
when add_generation_prompt and enable_thinking are set.
"""
import sys

import numpy as np
import gguf

T = gguf.TokenType
SPACE = "\u2581"
SCRIPTS = {
    "H": ["Hello," + SPACE, "world!"],
    "R": ["<think>", "Let" + SPACE + "me" + SPACE + "think.", "</think>", "The" + SPACE + "answer" + SPACE + "is" + SPACE + "4."],
    "T": ["<tool_call>", '{"name":' + SPACE + '"get_weather",' + SPACE + '"arguments":' + SPACE + '{"city":' + SPACE + '"Paris"}}', "</tool_call>"],
    "B": ['<tool_call>{"name":' + SPACE + "oops", "</tool_call>"],
}
USER_DEFINED = {"<think>", "</think>", "<tool_call>", "</tool_call>"}
TEMPLATE = ("{%- if tools %}[tools: {% for t in tools %}{{ t['function']['name'] }}{% if not loop.last %},{% endif %}"
            "{% endfor %}]{% endif -%}"
            "{%- for m in messages %}{{ m['content'] }}{% endfor -%}"
            "{%- if add_generation_prompt and enable_thinking %}<think>{% endif -%}")


def vocabulary(variant=""):
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    types = [T.UNKNOWN, T.CONTROL, T.CONTROL] + [T.BYTE] * 256
    for c in range(32, 127):
        tokens.append(SPACE if c == 32 else chr(c))
        types.append(T.NORMAL)
    for script in SCRIPTS.values():
        for piece in script:
            if piece not in tokens:
                tokens.append(piece)
                types.append(T.USER_DEFINED if piece in USER_DEFINED else T.NORMAL)
    for piece in ("la", "le", "OK") + (("lo",) if variant == "other-vocab" else ()):
        tokens.append(piece)
        types.append(T.NORMAL)
    return tokens, types


def successors(tokens, variant=""):
    ix = {t: i for i, t in enumerate(tokens)}
    if variant == "wrong":
        return {i: ix["la"] for i in range(len(tokens))}
    nxt = {i: ix["OK"] for i in range(len(tokens))}
    nxt[ix["OK"]] = 2
    for trigger, script in SCRIPTS.items():
        chain = [trigger] + script
        for a, b in zip(chain, chain[1:]):
            nxt[ix[a]] = ix[b]
        nxt[ix[script[-1]]] = 2
    nxt[ix["L"]], nxt[ix["la"]], nxt[ix["le"]] = ix["la"], ix["le"], ix["la"]
    return nxt


def main():
    if len(sys.argv) not in (2, 3) or sys.argv[2:] not in ([], ["wrong"], ["other-vocab"]):
        raise SystemExit(__doc__)
    variant = sys.argv[2] if len(sys.argv) == 3 else ""
    tokens, types = vocabulary(variant)
    n = len(tokens)
    d = 384
    assert n <= d, n
    heads, hd = 6, 64
    w = gguf.GGUFWriter(sys.argv[1], "llama")
    w.add_name("scripted llama (tg server tests)")
    w.add_context_length(512)
    w.add_embedding_length(d)
    w.add_block_count(1)
    w.add_feed_forward_length(d)
    w.add_head_count(heads)
    w.add_head_count_kv(2)
    w.add_key_length(hd)
    w.add_value_length(hd)
    w.add_rope_dimension_count(hd)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_freq_base(10000.0)
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores([0.0] * n)
    w.add_token_types(types)
    w.add_unk_token_id(0)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_add_bos_token(True)
    w.add_add_space_prefix(False)
    w.add_chat_template(TEMPLATE)
    f32 = lambda a: np.ascontiguousarray(a, dtype=np.float32)
    w.add_tensor("token_embd.weight", f32(np.eye(n, d)))
    w.add_tensor("output_norm.weight", f32(np.ones(d)))
    out = np.zeros((n, d))
    for a, b in successors(tokens, variant).items():
        out[b, a] = 3.0
    w.add_tensor("output.weight", f32(out))
    zeros = lambda r, c: f32(np.zeros((r, c)))
    p = "blk.0."
    w.add_tensor(p + "attn_norm.weight", f32(np.ones(d)))
    w.add_tensor(p + "attn_q.weight", zeros(heads * hd, d))
    w.add_tensor(p + "attn_k.weight", zeros(2 * hd, d))
    w.add_tensor(p + "attn_v.weight", zeros(2 * hd, d))
    w.add_tensor(p + "attn_output.weight", zeros(d, heads * hd))
    w.add_tensor(p + "ffn_norm.weight", f32(np.ones(d)))
    w.add_tensor(p + "ffn_gate.weight", zeros(d, d))
    w.add_tensor(p + "ffn_up.weight", zeros(d, d))
    w.add_tensor(p + "ffn_down.weight", zeros(d, d))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main()
