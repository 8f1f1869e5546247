//! perf's hists as it builds them: red-black trees (Linux's
//! `lib/rbtree.c` insertion: the same rotations and colours) walked with
//! perf's comparators. For most keys this is merely a sort; but perf's
//! `mispredict`, `abort` and `in_tx` comparators answer only "equal" or
//! "greater", so which entries perf merges and in which order it shows
//! them depend on the shape of its trees. Building the same trees gives
//! the same rows.

/// A node: the item it holds and its links.
struct Node {
    item: usize,
    left: Option<usize>,
    right: Option<usize>,
    parent: Option<usize>,
    red: bool,
}

/// A red-black tree of item indices.
#[derive(Default)]
pub(super) struct Tree {
    nodes: Vec<Node>,
    root: Option<usize>,
}

impl Tree {
    /// Walk from the root as perf does: `cmp(item at node)` is `None`
    /// for a match (its item is returned), `Some(true)` to go left.
    /// Without a match, `new` is linked where the walk ended and the
    /// tree rebalanced; `None` is returned.
    pub(super) fn insert(
        &mut self,
        new: usize,
        mut cmp: impl FnMut(usize) -> Option<bool>,
    ) -> Option<usize> {
        let mut parent = None;
        let mut left = false;
        let mut at = self.root;
        while let Some(n) = at {
            parent = Some(n);
            match cmp(self.nodes[n].item) {
                None => return Some(self.nodes[n].item),
                Some(l) => {
                    left = l;
                    at = if l {
                        self.nodes[n].left
                    } else {
                        self.nodes[n].right
                    };
                }
            }
        }
        let id = self.nodes.len();
        self.nodes.push(Node {
            item: new,
            left: None,
            right: None,
            parent,
            red: true,
        });
        match parent {
            None => self.root = Some(id),
            Some(p) if left => self.nodes[p].left = Some(id),
            Some(p) => self.nodes[p].right = Some(id),
        }
        self.fix(id);
        None
    }

    /// The items in order (leftmost first).
    pub(super) fn in_order(&self) -> Vec<usize> {
        let mut out = Vec::with_capacity(self.nodes.len());
        let mut stack = Vec::new();
        let mut at = self.root;
        while at.is_some() || !stack.is_empty() {
            while let Some(n) = at {
                stack.push(n);
                at = self.nodes[n].left;
            }
            if let Some(n) = stack.pop() {
                out.push(self.nodes[n].item);
                at = self.nodes[n].right;
            }
        }
        out
    }

    fn red(&self, n: Option<usize>) -> bool {
        n.is_some_and(|n| self.nodes[n].red)
    }

    /// Restore the red-black rules after linking red `node`.
    fn fix(&mut self, mut node: usize) {
        loop {
            let Some(parent) = self.nodes[node].parent else {
                self.nodes[node].red = false;
                return;
            };
            if !self.nodes[parent].red {
                return;
            }
            let Some(gparent) = self.nodes[parent].parent else {
                self.nodes[parent].red = false;
                return;
            };
            let parent_left = self.nodes[gparent].left == Some(parent);
            let uncle = if parent_left {
                self.nodes[gparent].right
            } else {
                self.nodes[gparent].left
            };
            if self.red(uncle) {
                let u = uncle.unwrap_or(gparent);
                self.nodes[parent].red = false;
                self.nodes[u].red = false;
                self.nodes[gparent].red = true;
                node = gparent;
                continue;
            }
            let mut parent = parent;
            if parent_left && self.nodes[parent].right == Some(node) {
                self.rotate(parent, true);
                parent = node;
            } else if !parent_left && self.nodes[parent].left == Some(node) {
                self.rotate(parent, false);
                parent = node;
            }
            self.rotate(gparent, !parent_left);
            self.nodes[parent].red = false;
            self.nodes[gparent].red = true;
            return;
        }
    }

    /// Rotate at `x`: left (its right child rises) or right.
    fn rotate(&mut self, x: usize, to_left: bool) {
        let child = |t: &Tree, n: usize, l: bool| {
            if l {
                t.nodes[n].left
            } else {
                t.nodes[n].right
            }
        };
        let Some(y) = child(self, x, !to_left) else {
            return;
        };
        let inner = child(self, y, to_left);
        if to_left {
            self.nodes[x].right = inner;
            self.nodes[y].left = Some(x);
        } else {
            self.nodes[x].left = inner;
            self.nodes[y].right = Some(x);
        }
        if let Some(i) = inner {
            self.nodes[i].parent = Some(x);
        }
        let up = self.nodes[x].parent;
        self.nodes[y].parent = up;
        self.nodes[x].parent = Some(y);
        match up {
            None => self.root = Some(y),
            Some(p) if self.nodes[p].left == Some(x) => self.nodes[p].left = Some(y),
            Some(p) => self.nodes[p].right = Some(y),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Insert `keys` by their order (equal ones merge).
    fn tree(keys: &[i32]) -> (Tree, Vec<usize>) {
        let mut t = Tree::default();
        let mut merged = Vec::new();
        for (i, k) in keys.iter().enumerate() {
            let found = t.insert(i, |at| match keys[at].cmp(k) {
                std::cmp::Ordering::Equal => None,
                o => Some(o == std::cmp::Ordering::Greater),
            });
            merged.extend(found);
        }
        (t, merged)
    }

    fn check(t: &Tree, n: Option<usize>, black: &mut Option<usize>, depth: usize) {
        let Some(n) = n else {
            match black {
                Some(b) => assert_eq!(*b, depth, "black heights differ"),
                None => *black = Some(depth),
            }
            return;
        };
        let node = &t.nodes[n];
        if node.red {
            assert!(!t.red(node.left) && !t.red(node.right), "red under red");
        }
        let d = depth + usize::from(!node.red);
        check(t, node.left, black, d);
        check(t, node.right, black, d);
    }

    #[test]
    fn a_sorted_balanced_tree_of_distinct_keys() {
        let keys: Vec<i32> = (0..500).map(|i| (i * 7919) % 1009).collect();
        let (t, merged) = tree(&keys);
        let order: Vec<i32> = t.in_order().iter().map(|&i| keys[i]).collect();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(order, sorted);
        assert!(merged.is_empty());
        assert!(!t.red(t.root));
        check(&t, t.root, &mut None, 0);
        // Ascending inserts stay balanced too.
        let (t, _) = tree(&(0..1000).collect::<Vec<_>>());
        check(&t, t.root, &mut None, 0);
        let (_, merged) = tree(&[3, 1, 3, 2, 1]);
        assert_eq!(merged, [0, 1]);
    }
}
