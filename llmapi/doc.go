// Package llmapi speaks to OpenAI-compatible model endpoints (OpenAI,
// Ollama, llama.cpp server, vLLM…), for the places memgate asks a model:
// the judge (chat completions), the Mem0 fact extractor and its update
// step (chat completions, relate) and the embedder (embeddings). They share what is easy to
// get subtly wrong: checking an endpoint URL without echoing its
// credentials (ParseEndpoint), a JSON POST with a bearer key and a bounded
// answer (PostJSON), transport errors without the URL and its query
// (TransportError), telling a timeout (IsTimeout), and reading a server's
// error message without echoing the request (ServerMessage). Each caller
// keeps its prompts, parsing and error wording.
package llmapi
