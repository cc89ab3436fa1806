"""SmolLM2-135M-Instruct, a Llama-architecture model, run by our own code (000 §8): its GGUF file from the
package index (files), read and dequantized (gguf_file), its byte-level BPE tokenizer (tokenizer), the
model (model), sampling and perplexity (generation), and what the page looks inside at (inspection)."""
