//! pmx-archcheck's integration tests, one test binary: a module per suite.
//! `doc_links`: every intra-doc and Markdown link of the workspace resolves;
//! `limits`: ARCHITECTURE.md's limits hold on this tree; `env_reads`: the
//! rule that the environment is read at the edge.

mod doc_links;
mod env_reads;
mod limits;
