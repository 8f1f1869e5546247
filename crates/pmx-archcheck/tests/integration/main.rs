//! pmx-archcheck's integration tests, one test binary: a module per suite.
//! `doc_links`: every intra-doc and Markdown link of the workspace resolves;
//! `limits`: ARCHITECTURE.md's limits hold on this tree.

mod doc_links;
mod limits;
