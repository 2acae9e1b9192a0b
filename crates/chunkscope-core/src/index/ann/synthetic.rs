//! Synthetic embeddings for tests and benchmarks, from a small seeded generator: the same
//! vectors and samples every run.

use crate::index::vector::unit;

/// A small deterministic generator (xorshift64*): same vectors and samples every run.
#[derive(Debug, Clone)]
pub struct XorShift(u64);

impl XorShift {
    pub fn new(seed: u64) -> XorShift {
        XorShift(seed.max(1) ^ 0x9E37_79B9_7F4A_7C15)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in [0, 1).
    pub fn unit_f32(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }

    /// Standard normal (Box-Muller).
    pub fn normal(&mut self) -> f32 {
        let u1 = self.unit_f32().max(1e-7);
        let u2 = self.unit_f32();
        (-2.0 * u1.ln()).sqrt() * (std::f32::consts::TAU * u2).cos()
    }
}

/// Synthetic embeddings for tests and benchmarks: `n` unit vectors of `dim` values, row-major, in
/// `clusters` topics under about sqrt(clusters) broader ones. Each vector is the sum of a direction
/// every vector shares (sentence embeddings are anisotropic), its broad topic's, its topic's, a
/// variation of its own and a little isotropic noise; within a broad topic, topics and variations
/// lie in a 12-dimensional subspace, so topics are near or far from each other by degrees and
/// neighbours are set by meaning rather than noise: the low intrinsic dimension of real
/// embeddings. A topic's vectors have cosines about 0.87 among them, 0.47 (0.25 to 0.7) with the
/// rest of their broad topic and 0.13 with the others. Deterministic for a seed; the same seed and
/// `clusters` with another `n` gives the same topics, so held-out queries can be drawn with
/// `clustered_queries`.
pub fn clustered_vectors(n: usize, dim: usize, clusters: usize, seed: u64) -> Vec<f32> {
    Clusters::new(dim, clusters, seed, Shape::Latent).draw(n, seed ^ 0xDA7A)
}

/// `n` vectors drawn from the topics of `clustered_vectors(_, dim, clusters, seed)` but not among
/// them: queries for it.
pub fn clustered_queries(n: usize, dim: usize, clusters: usize, seed: u64) -> Vec<f32> {
    Clusters::new(dim, clusters, seed, Shape::Latent).draw(n, seed ^ 0x0E21E5)
}

/// A harder shape than `clustered_vectors`: every topic its own random direction, so the topics of
/// a broad topic are all alike far from each other (cosine 0.43) and tight inside (0.8 to 0.885,
/// set by eight sub-topics and noise): islands, a known weak spot of graph indexes, where a
/// search that lands on the wrong island has no slope toward the right one.
pub fn island_vectors(n: usize, dim: usize, clusters: usize, seed: u64) -> Vec<f32> {
    Clusters::new(dim, clusters, seed, Shape::Islands).draw(n, seed ^ 0xDA7A)
}

/// Held-out queries for `island_vectors`.
pub fn island_queries(n: usize, dim: usize, clusters: usize, seed: u64) -> Vec<f32> {
    Clusters::new(dim, clusters, seed, Shape::Islands).draw(n, seed ^ 0x0E21E5)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    Latent,
    Islands,
}

struct Clusters {
    dim: usize,
    shape: Shape,
    /// The shared direction and the broad topics'.
    shared: Vec<f32>,
    broad: Vec<f32>,
    /// Each topic's direction (a unit vector).
    centres: Vec<f32>,
    /// Islands: `SUB` sub-topic directions a topic. Latent: `LATENT` directions a broad topic.
    subs: Vec<f32>,
}

const SUB: usize = 8;
const LATENT: usize = 12;

fn row(m: &[f32], i: usize, dim: usize) -> &[f32] {
    &m[i * dim..(i + 1) * dim]
}

impl Clusters {
    fn new(dim: usize, clusters: usize, seed: u64, shape: Shape) -> Clusters {
        let clusters = clusters.max(1);
        let broad = ((clusters as f64).sqrt().round() as usize).max(1);
        let mut rng = XorShift::new(seed);
        let gauss_unit = |rng: &mut XorShift, count: usize| -> Vec<f32> {
            (0..count)
                .flat_map(|_| {
                    let v: Vec<f32> = (0..dim).map(|_| rng.normal()).collect();
                    unit(&v).into_owned()
                })
                .collect()
        };
        let shared = gauss_unit(&mut rng, 1);
        let broad_dirs = gauss_unit(&mut rng, broad);
        let (centres, subs) = match shape {
            Shape::Islands => (
                gauss_unit(&mut rng, clusters),
                gauss_unit(&mut rng, clusters * SUB),
            ),
            Shape::Latent => {
                let basis = gauss_unit(&mut rng, broad * LATENT);
                let mut centres = Vec::with_capacity(clusters * dim);
                for t in 0..clusters {
                    let b = t % broad;
                    let a: Vec<f32> = (0..LATENT).map(|_| rng.normal()).collect();
                    let mut c = vec![0f32; dim];
                    for (k, ak) in a.iter().enumerate() {
                        let d = row(&basis, b * LATENT + k, dim);
                        c.iter_mut().zip(d).for_each(|(x, y)| *x += ak * y);
                    }
                    centres.extend_from_slice(&unit(&c));
                }
                (centres, basis)
            }
        };
        Clusters {
            dim,
            shape,
            shared,
            broad: broad_dirs,
            centres,
            subs,
        }
    }

    fn draw(&self, n: usize, seed: u64) -> Vec<f32> {
        use rayon::prelude::*;
        let dim = self.dim;
        let clusters = self.centres.len() / dim;
        let broad = self.broad.len() / dim;
        let mut out = vec![0f32; n * dim];
        // Per-row generators, so the vectors do not depend on the number of threads.
        out.par_chunks_mut(dim).enumerate().for_each(|(i, v)| {
            let mut rng = XorShift::new(seed.wrapping_add((i as u64).wrapping_mul(0x9E37_79B9)));
            let c = (rng.next_u64() % clusters as u64) as usize;
            let b = c % broad;
            let base = [
                (row(&self.shared, 0, dim), 0.45f32),
                (row(&self.broad, b, dim), 0.75),
                (row(&self.centres, c, dim), 0.8),
            ];
            for (j, x) in v.iter_mut().enumerate() {
                *x = base.iter().map(|(d, w)| w * d[j]).sum::<f32>();
            }
            let sigma = match self.shape {
                Shape::Islands => {
                    let s = c * SUB + (rng.next_u64() % SUB as u64) as usize;
                    let sub = row(&self.subs, s, dim);
                    v.iter_mut().zip(sub).for_each(|(x, y)| *x += 0.4 * y);
                    0.45
                }
                Shape::Latent => {
                    // A variation inside the broad topic's subspace, norm about 0.35.
                    let w = 0.35 / (LATENT as f32).sqrt();
                    for k in 0..LATENT {
                        let g = w * rng.normal();
                        let d = row(&self.subs, b * LATENT + k, dim);
                        v.iter_mut().zip(d).for_each(|(x, y)| *x += g * y);
                    }
                    0.3
                }
            } / (dim as f32).sqrt();
            for x in v.iter_mut() {
                *x += sigma * rng.normal();
            }
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            v.iter_mut().for_each(|x| *x /= norm);
        });
        out
    }
}
