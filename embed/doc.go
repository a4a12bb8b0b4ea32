// Package embed gives memgate optional semantic search: it keeps a vector
// for every active record, made by an OpenAI-compatible embeddings endpoint
// (Ollama, llama.cpp server, vLLM, OpenAI; --embed-url), and scores a
// query's similarity to them. Without an endpoint nothing here runs and
// search ranks lexically only.
//
// # Parts
//
//   - Client speaks POST /v1/embeddings: {"model", "input": [texts]} in
//     batches of up to 64, an optional bearer key, a timeout per request, a
//     bounded answer, retries with exponential backoff on what may pass
//     (transport errors, timeouts, 408, 429, 5xx) and none on what will not
//     (other 4xx, an undecodable answer). Errors name the endpoint, the
//     status and the server's own message. Vectors are scaled to unit
//     length on arrival, so a cosine is a dot product. The dimension is
//     fixed by the first answer; another later is ErrDimension.
//   - Index holds the vectors and runs the worker. Changed(id, text,
//     active), called after each commit, never blocks and never fails: it
//     queues the change, or, with the queue full, marks that a reconcile is
//     needed. The worker embeds in batches, deletes the vectors of records
//     no longer active, and reconciles (at start, and after an overflow)
//     against a scan of the active records: it embeds what has no vector
//     (or a vector of another text) and drops vectors of records gone. With
//     the endpoint down, a batch waits with backoff (1s doubling to 1m) and
//     the queue holds; the rest of memgate is unaffected. Close lets a
//     request in flight finish, bounded by its context, and sends nothing
//     more; what is not embedded yet is left to the next start's reconcile.
//   - Store persists vectors (with the model name and dimension), so a
//     restart embeds only what changed meanwhile. Vectors of another model,
//     or of another dimension under the same model name, are discarded and
//     embedded again. Before embedding a record it holds no vector for, the
//     worker reads the Store: a vector made from the same text by the same
//     model (by another instance sharing the Store) is taken as it is.
//   - Options.Reconcile serves a store without a commit feed (PostgreSQL,
//     shared by several instances; see below).
//   - Scores is the semantic half of search's hybrid ranking (see below).
//   - Metrics (NewMetrics) are Prometheus collectors registered with the
//     Registerer given, no globals.
//   - embedtest holds a deterministic fake endpoint on loopback and an
//     in-memory Store, for this package's tests and other packages'.
//
// # A store without a commit feed
//
// On PostgreSQL nothing calls Changed: no feed reports commits, and other
// instances write too. With Options.Reconcile set (the sidecar uses 5 s
// there; 0 on Badger, whose feed calls Changed) the worker reconciles every
// period against the scan of the active records, and keeps its vectors in
// the database's KV area, which every instance reads.
//
// Freshness bound: a record written through any instance, this one
// included, gets a semantic score on an instance within one reconcile
// period of that instance, plus the pass and the embedding request; until
// then it ranks lexically. A record gone loses its vector on the same bound
// (search never scores an inactive record meanwhile: it scores only what
// its own read finds active). The wait between passes is the period, or
// ten times the last scan where that is longer (a store so large that a
// scan takes over a tenth of the period): the passes never take more than
// a tenth of the worker's time.
//
// The first instance whose pass finds a record embeds it and stores the
// vector; the others take the stored vector, so the endpoint is asked once
// per record unless two instances' passes meet within one request (both
// then embed it; the second write wins, with the same vector). A vector
// stored for a record that left the active layer meanwhile is dropped by
// the next pass of the instance that holds it, or by any instance's first
// pass after a start.
//
// Each pass costs one scan of the active records per instance (ids and
// texts; the sidecar reads PostgreSQL's active index, not the records'
// documents), so the period trades freshness against that load. Instances
// that share a Store must embed with one model, since a Store holds one
// model's vectors (load discards another's): the sidecar gives each model
// a KV namespace of its own, so a fleet changing --embed-model instance by
// instance keeps both sets meanwhile.
//
// # Scoring and the hybrid
//
// Scores embeds the query (one attempt, within the caller's deadline; a
// cache keeps the 256 most recent query vectors) and returns, for each
// record id given that holds a vector, the cosine of the two vectors in
// [-1, 1]. An error means "no semantic part": search then ranks lexically.
// Search combines the two as
//
//	relevance = 0.3·bm25 + 0.7·max(0, cosine)
//
// which assumes: bm25 is already normalised to [0, 1]; cosines below zero
// carry no evidence (unrelated texts of one language sit around 0 to 0.3 with
// most models, so small positive values are noise the threshold must
// absorb); the cosine scale is the model's (nomic-embed-text, bge and
// OpenAI's models differ in spread, so a threshold tuned on one model is
// not portable); a record without a vector (not embedded yet, or refused by
// the endpoint) is ranked on its lexical part alone until it gets one.
//
// # The exact scan
//
// Scores is an exact scan over the ids it is given. Vectors sit in one
// contiguous float32 slab (rows reused after removals); the dot products
// are gonum's BLAS (SSE assembly on amd64, about 3× the best Go loop,
// BenchmarkDot); from 8,192 ids on, the scan is split across GOMAXPROCS
// goroutines; the result map is filled after, on one goroutine.
//
// Measured with BenchmarkScores at 100,000 records on the 2-core
// development VM while other jobs loaded it (two runs, load average 9 to
// 20), as CPU time per query, which the load inflates less than wall time:
//
//	                          384 dims    768 dims
//	plain Go loop (baseline)   90-106 ms   110-137 ms
//	Scores                     40-55 ms    72-84 ms
//	Similarities (no map)      29-36 ms    65-75 ms
//	map and lookups alone      18-25 ms    15-26 ms
//
// Wall time in the quieter run (load 10): Scores 110-170 ms at 384
// dimensions and 140-160 ms at 768.
//
// That is above the 25 ms a read should cost: at 768 dimensions a query
// reads 300 MB of vectors, so the scan is bound by memory bandwidth, and at
// 100,000 ids the map the interface returns costs about as much again as
// the arithmetic at 384. The cost is linear in the ids: 25 ms of CPU is
// reached at some 55,000 records of 384 dimensions or 30,000 of 768 (wall
// time is longer while the machine is shared).
// Options measured and not taken: int8 quantisation (a quarter of the
// bytes, but without SIMD the widening multiplies made it 2× slower than
// float32 in a Go loop); bfloat16 (half the bytes, no faster, a third of
// the precision). If subjects of 100,000 records matter, the next step is
// an approximate index per subject (HNSW) returning the top candidates
// rather than every id's cosine. Memory: n·dim·4 bytes, 300 MiB for 100,000
// records of 768 dimensions.
package embed
