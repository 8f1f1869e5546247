//! perf's hists as it builds them: red-black trees (Linux's
//! `lib/rbtree.c` insertion: the same rotations and colours) walked with
//! perf's comparators. For most keys this is merely a sort; but perf's
//! `mispredict`, `abort` and `in_tx` comparators answer only "equal" or
//! "greater", so which entries perf merges and in which order it shows
//! them depend on the shape of its trees. Building the same trees gives
//! the same rows.

/// No node (a link's end).
const NIL: u32 = u32::MAX;

/// A node: the item it holds and its links ([`NIL`]: none), 20 bytes
/// where `Option<usize>` links took 64: a branch table may have
/// millions of rows.
struct Node {
    item: u32,
    left: u32,
    right: u32,
    parent: u32,
    red: bool,
}

fn link(n: u32) -> Option<usize> {
    (n != NIL).then_some(n as usize)
}

fn unlink(n: Option<usize>) -> u32 {
    n.map_or(NIL, |n| n as u32)
}

/// A red-black tree of item indices (fewer than `u32::MAX`).
#[derive(Default)]
pub(super) struct Tree {
    nodes: Vec<Node>,
    root: Option<usize>,
}

impl Tree {
    fn left(&self, n: usize) -> Option<usize> {
        link(self.nodes[n].left)
    }

    fn right(&self, n: usize) -> Option<usize> {
        link(self.nodes[n].right)
    }

    fn parent(&self, n: usize) -> Option<usize> {
        link(self.nodes[n].parent)
    }

    fn item(&self, n: usize) -> usize {
        self.nodes[n].item as usize
    }

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
            match cmp(self.item(n)) {
                None => return Some(self.item(n)),
                Some(l) => {
                    left = l;
                    at = if l { self.left(n) } else { self.right(n) };
                }
            }
        }
        let id = self.nodes.len();
        self.nodes.push(Node {
            item: new as u32,
            left: NIL,
            right: NIL,
            parent: unlink(parent),
            red: true,
        });
        match parent {
            None => self.root = Some(id),
            Some(p) if left => self.nodes[p].left = id as u32,
            Some(p) => self.nodes[p].right = id as u32,
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
                at = self.left(n);
            }
            if let Some(n) = stack.pop() {
                out.push(self.item(n));
                at = self.right(n);
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
            let Some(parent) = self.parent(node) else {
                self.nodes[node].red = false;
                return;
            };
            if !self.nodes[parent].red {
                return;
            }
            let Some(gparent) = self.parent(parent) else {
                self.nodes[parent].red = false;
                return;
            };
            let parent_left = self.left(gparent) == Some(parent);
            let uncle = if parent_left {
                self.right(gparent)
            } else {
                self.left(gparent)
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
            if parent_left && self.right(parent) == Some(node) {
                self.rotate(parent, true);
                parent = node;
            } else if !parent_left && self.left(parent) == Some(node) {
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
        let child = |t: &Tree, n: usize, l: bool| if l { t.left(n) } else { t.right(n) };
        let Some(y) = child(self, x, !to_left) else {
            return;
        };
        let inner = child(self, y, to_left);
        if to_left {
            self.nodes[x].right = unlink(inner);
            self.nodes[y].left = x as u32;
        } else {
            self.nodes[x].left = unlink(inner);
            self.nodes[y].right = x as u32;
        }
        if let Some(i) = inner {
            self.nodes[i].parent = x as u32;
        }
        let up = self.parent(x);
        self.nodes[y].parent = unlink(up);
        self.nodes[x].parent = y as u32;
        match up {
            None => self.root = Some(y),
            Some(p) if self.left(p) == Some(x) => self.nodes[p].left = y as u32,
            Some(p) => self.nodes[p].right = y as u32,
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
            assert!(!t.red(t.left(n)) && !t.red(t.right(n)), "red under red");
        }
        let d = depth + usize::from(!node.red);
        check(t, t.left(n), black, d);
        check(t, t.right(n), black, d);
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
