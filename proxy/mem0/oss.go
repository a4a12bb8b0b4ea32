package mem0

import "net/http"

// The Mem0 open-source REST server's routes (server/main.py in the mem0
// repository) answer like the platform's, with its own messages. Its add,
// list and search live beside their platform twins (add.go, list.go,
// search.go); these are the per-memory routes.

func (h *Handler) ossGet(w http.ResponseWriter, r *http.Request) { h.get(w, r) }

func (h *Handler) ossHistory(w http.ResponseWriter, r *http.Request) { h.history(w, r) }

func (h *Handler) ossUpdate(w http.ResponseWriter, r *http.Request) {
	h.updateWith(w, r, "Memory updated successfully!")
}

func (h *Handler) ossDelete(w http.ResponseWriter, r *http.Request) {
	h.deleteWith(w, r, "Memory deleted successfully")
}

func (h *Handler) ossDeleteAll(w http.ResponseWriter, r *http.Request) {
	h.deleteAllWith(w, r, "All relevant memories deleted")
}
