"""dpedge exporter (server side): turns a labelled dataset into a differentially private bundle.

Data flows one way: records -> embeddings -> codes -> counts -> noisy tables -> bundle. Only
`exporter.release` turns exact counts into something that leaves the server. The exporter
reuses the runtime's tokenizer, encoder and hashing so that both sides hash identically.
"""
