//! [`Params`]: named parameter collections.
//!
//! A model's parameters (and an optimiser's state) are a map from names to arrays,
//! ordered by name, so that every walk over them (flattening for a transform, pairing
//! parameters with gradients, writing them to a file) sees the same order. Nested models
//! use dotted names (`"layer1.weight"`); [`Params::with_prefix`] and
//! [`Params::strip_prefix`] move between levels.
//!
//! ```
//! use lazuli::{Array, Params};
//! let mut p = Params::new();
//! p.insert("w", Array::from_slice(&[1.0f32, 2.0], &[2])?);
//! p.insert("b", Array::from_slice(&[0.5f32], &[1])?);
//! let doubled = p.map(|_, a| a.mul(2.0))?;
//! doubled.eval()?;
//! assert_eq!(doubled.names(), ["b", "w"]);
//! assert_eq!(doubled["w"].to_vec::<f32>()?, vec![2.0, 4.0]);
//! # Ok::<(), lazuli::Error>(())
//! ```

use std::collections::{BTreeMap, btree_map};
use std::ops::Index;

use crate::array::Array;
use crate::error::{Error, Result};

/// A name → array map of model parameters, ordered by name.
///
/// Cloning is cheap: arrays are handles, so a clone shares their data.
#[derive(Debug, Clone, Default)]
pub struct Params(BTreeMap<String, Array>);

impl Params {
    /// An empty collection.
    pub fn new() -> Params {
        Params(BTreeMap::new())
    }

    /// Adds `array` under `name`, returning the array it replaces, if any.
    pub fn insert(&mut self, name: impl Into<String>, array: Array) -> Option<Array> {
        self.0.insert(name.into(), array)
    }

    /// The array named `name`.
    pub fn get(&self, name: &str) -> Option<&Array> {
        self.0.get(name)
    }

    /// The array named `name`, to replace in place.
    pub fn get_mut(&mut self, name: &str) -> Option<&mut Array> {
        self.0.get_mut(name)
    }

    /// Takes out the array named `name`.
    pub fn remove(&mut self, name: &str) -> Option<Array> {
        self.0.remove(name)
    }

    /// True if an array is named `name`.
    pub fn contains(&self, name: &str) -> bool {
        self.0.contains_key(name)
    }

    /// Number of arrays.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True if there are no arrays.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Total number of elements over all arrays.
    pub fn num_elements(&self) -> usize {
        self.0.values().map(Array::size).sum()
    }

    /// `(name, array)` pairs in name order.
    pub fn iter(&self) -> Iter<'_> {
        Iter(self.0.iter())
    }

    /// `(name, array)` pairs in name order, the arrays mutable.
    pub fn iter_mut(&mut self) -> IterMut<'_> {
        IterMut(self.0.iter_mut())
    }

    /// The names, in order.
    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &str> + ExactSizeIterator + '_ {
        self.0.keys().map(String::as_str)
    }

    /// The arrays, in name order.
    pub fn values(&self) -> impl DoubleEndedIterator<Item = &Array> + ExactSizeIterator + '_ {
        self.0.values()
    }

    /// The arrays, in name order, mutable.
    pub fn values_mut(&mut self) -> impl DoubleEndedIterator<Item = &mut Array> + ExactSizeIterator + '_ {
        self.0.values_mut()
    }

    /// The names, in order, as owned strings.
    pub fn names(&self) -> Vec<String> {
        self.0.keys().cloned().collect()
    }

    /// A new collection with `f(name, array)` under each name. Stops at the first error.
    pub fn map(&self, mut f: impl FnMut(&str, &Array) -> Result<Array>) -> Result<Params> {
        self.iter().map(|(name, a)| Ok((name.to_string(), f(name, a)?))).collect::<Result<_>>().map(Params)
    }

    /// A new collection with `f(name, self[name], other[name])` under each name. Errors
    /// (before calling `f`) unless both hold exactly the same names.
    ///
    /// ```
    /// use lazuli::{Array, Params};
    /// let p: Params = [("w", Array::from_slice(&[1.0f32], &[1])?)].into_iter().collect();
    /// let g: Params = [("w", Array::from_slice(&[0.5f32], &[1])?)].into_iter().collect();
    /// let next = p.zip_map(&g, |_, w, dw| w.sub(dw))?;
    /// assert_eq!(next["w"].to_vec::<f32>()?, vec![0.5]);
    /// let other: Params = [("v", Array::from_slice(&[0.5f32], &[1])?)].into_iter().collect();
    /// assert!(p.zip_map(&other, |_, w, dw| w.sub(dw)).is_err());
    /// # Ok::<(), lazuli::Error>(())
    /// ```
    pub fn zip_map(&self, other: &Params, mut f: impl FnMut(&str, &Array, &Array) -> Result<Array>) -> Result<Params> {
        self.check_same_names("Params::zip_map", "the first collection", other, "the second")?;
        self.iter()
            .zip(other.values())
            .map(|((name, a), b)| Ok((name.to_string(), f(name, a, b)?)))
            .collect::<Result<_>>()
            .map(Params)
    }

    /// Errors unless `self` (called `this` in the message) and `other` (`that`) hold the
    /// same names, saying which names only one of them has.
    pub(crate) fn check_same_names(&self, op: &'static str, this: &str, other: &Params, that: &str) -> Result<()> {
        if self.len() == other.len() && self.keys().eq(other.keys()) {
            return Ok(());
        }
        let only = |a: &Params, b: &Params| -> Vec<String> {
            a.keys().filter(|k| !b.contains(k)).map(|k| format!("{k:?}")).collect()
        };
        let list = |v: Vec<String>| if v.is_empty() { "none".to_string() } else { v.join(", ") };
        Err(Error::invalid(
            op,
            format!(
                "{this} and {that} must hold the same names; only in {this}: {}; only in {that}: {}",
                list(only(self, other)),
                list(only(other, self)),
            ),
        ))
    }

    /// Evaluates every array, in one [`crate::eval()`] call (shared work runs once).
    pub fn eval(&self) -> Result<()> {
        let all: Vec<&Array> = self.0.values().collect();
        crate::eval::eval(&all)
    }

    /// The names and the arrays as two vectors in name order (for transforms that work
    /// on `&[Array]`); [`Params::from_vec`] rebuilds the collection.
    pub fn to_vec(&self) -> (Vec<String>, Vec<Array>) {
        self.0.iter().map(|(k, v)| (k.clone(), v.clone())).unzip()
    }

    /// [`Params::to_vec`] without cloning.
    pub fn into_vec(self) -> (Vec<String>, Vec<Array>) {
        self.0.into_iter().unzip()
    }

    /// A collection from names and arrays paired in order (any order: the result is
    /// ordered by name). Errors if the counts differ or a name repeats.
    pub fn from_vec<S: Into<String>>(names: impl IntoIterator<Item = S>, arrays: Vec<Array>) -> Result<Params> {
        let names: Vec<String> = names.into_iter().map(Into::into).collect();
        if names.len() != arrays.len() {
            return Err(Error::invalid(
                "Params::from_vec",
                format!("got {} names for {} arrays; pass one name per array", names.len(), arrays.len()),
            ));
        }
        let mut map = BTreeMap::new();
        for (name, a) in names.into_iter().zip(arrays) {
            match map.entry(name) {
                btree_map::Entry::Vacant(e) => {
                    e.insert(a);
                }
                btree_map::Entry::Occupied(e) => {
                    return Err(Error::invalid(
                        "Params::from_vec",
                        format!("the name {:?} appears twice; names must be unique", e.key()),
                    ));
                }
            }
        }
        Ok(Params(map))
    }

    /// The same arrays with `prefix` and a dot before each name (`"w"` becomes
    /// `"layer1.w"`): how a model nests the parameters of its parts.
    pub fn with_prefix(&self, prefix: &str) -> Params {
        Params(self.0.iter().map(|(k, v)| (format!("{prefix}.{k}"), v.clone())).collect())
    }

    /// The arrays whose names start with `prefix` and a dot, with that part removed
    /// (`"layer1.w"` becomes `"w"`); the inverse of [`Params::with_prefix`].
    pub fn strip_prefix(&self, prefix: &str) -> Params {
        let dotted = format!("{prefix}.");
        Params(
            self.0
                .range(dotted.clone()..)
                .map_while(|(k, v)| k.strip_prefix(&dotted).map(|rest| (rest.to_string(), v.clone())))
                .collect(),
        )
    }
}

/// `params["w"]`: the array named `"w"`.
///
/// # Panics
///
/// If there is none (as `BTreeMap`'s `Index`); use [`Params::get`] to handle absence.
impl Index<&str> for Params {
    type Output = Array;
    fn index(&self, name: &str) -> &Array {
        match self.0.get(name) {
            Some(a) => a,
            None => panic!("Params has no array named {name:?}; its names are {:?}", self.names()),
        }
    }
}

impl<S: Into<String>> FromIterator<(S, Array)> for Params {
    /// Later pairs replace earlier ones with the same name.
    fn from_iter<I: IntoIterator<Item = (S, Array)>>(iter: I) -> Params {
        Params(iter.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }
}

impl<S: Into<String>> Extend<(S, Array)> for Params {
    fn extend<I: IntoIterator<Item = (S, Array)>>(&mut self, iter: I) {
        self.0.extend(iter.into_iter().map(|(k, v)| (k.into(), v)));
    }
}

impl From<BTreeMap<String, Array>> for Params {
    fn from(map: BTreeMap<String, Array>) -> Params {
        Params(map)
    }
}

impl From<Params> for BTreeMap<String, Array> {
    fn from(p: Params) -> BTreeMap<String, Array> {
        p.0
    }
}

/// Iterator over `(name, array)` pairs in name order: [`Params::iter`].
#[derive(Debug, Clone)]
pub struct Iter<'a>(btree_map::Iter<'a, String, Array>);

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a str, &'a Array);
    fn next(&mut self) -> Option<Self::Item> {
        self.0.next().map(|(k, v)| (k.as_str(), v))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}
impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.0.next_back().map(|(k, v)| (k.as_str(), v))
    }
}
impl ExactSizeIterator for Iter<'_> {}

/// Iterator over `(name, mutable array)` pairs in name order: [`Params::iter_mut`].
#[derive(Debug)]
pub struct IterMut<'a>(btree_map::IterMut<'a, String, Array>);

impl<'a> Iterator for IterMut<'a> {
    type Item = (&'a str, &'a mut Array);
    fn next(&mut self) -> Option<Self::Item> {
        self.0.next().map(|(k, v)| (k.as_str(), v))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}
impl DoubleEndedIterator for IterMut<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.0.next_back().map(|(k, v)| (k.as_str(), v))
    }
}
impl ExactSizeIterator for IterMut<'_> {}

/// Owning iterator over `(name, array)` pairs in name order.
#[derive(Debug)]
pub struct IntoIter(btree_map::IntoIter<String, Array>);

impl Iterator for IntoIter {
    type Item = (String, Array);
    fn next(&mut self) -> Option<Self::Item> {
        self.0.next()
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}
impl DoubleEndedIterator for IntoIter {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.0.next_back()
    }
}
impl ExactSizeIterator for IntoIter {}

impl IntoIterator for Params {
    type Item = (String, Array);
    type IntoIter = IntoIter;
    fn into_iter(self) -> IntoIter {
        IntoIter(self.0.into_iter())
    }
}

impl<'a> IntoIterator for &'a Params {
    type Item = (&'a str, &'a Array);
    type IntoIter = Iter<'a>;
    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl<'a> IntoIterator for &'a mut Params {
    type Item = (&'a str, &'a mut Array);
    type IntoIter = IterMut<'a>;
    fn into_iter(self) -> IterMut<'a> {
        self.iter_mut()
    }
}

#[cfg(test)]
mod tests {
    use super::Params;
    use crate::array::Array;
    use crate::error::Error;

    fn arr(x: f32) -> Array {
        Array::from_slice(&[x], &[1]).unwrap()
    }

    fn values(p: &Params) -> Vec<f32> {
        p.values().map(|a| a.item::<f32>().unwrap()).collect()
    }

    #[test]
    fn ordered_by_name_whatever_the_insertion_order() {
        let p: Params = [("w", arr(1.0)), ("b", arr(2.0)), ("a.z", arr(3.0))].into_iter().collect();
        assert_eq!(p.names(), ["a.z", "b", "w"]);
        assert_eq!(p.keys().rev().collect::<Vec<_>>(), ["w", "b", "a.z"]);
        assert_eq!(p.iter().len(), 3);
        assert_eq!(values(&p), [3.0, 2.0, 1.0]);
        let owned: Vec<String> = p.clone().into_iter().map(|(k, _)| k).collect();
        assert_eq!(owned, p.names());
        assert_eq!((p.len(), p.is_empty(), p.num_elements()), (3, false, 3));
        assert!(Params::new().is_empty());
    }

    #[test]
    fn insert_get_remove_index() {
        let mut p = Params::new();
        assert!(p.insert("w", arr(1.0)).is_none());
        assert!(p.insert(String::from("w"), arr(2.0)).is_some(), "insert replaces");
        assert_eq!(p["w"].item::<f32>().unwrap(), 2.0);
        *p.get_mut("w").unwrap() = arr(3.0);
        assert_eq!(p.get("w").unwrap().item::<f32>().unwrap(), 3.0);
        assert!(p.get("v").is_none() && !p.contains("v") && p.contains("w"));
        for (_, a) in &mut p {
            *a = a.add(1.0).unwrap();
        }
        assert_eq!(values(&p), [4.0]);
        p.extend([("v", arr(0.0))]);
        assert!(p.remove("w").is_some());
        assert_eq!(p.names(), ["v"]);
    }

    #[test]
    #[should_panic(expected = "no array named \"nope\"")]
    fn index_names_the_missing_array() {
        let p: Params = [("w", arr(1.0))].into_iter().collect();
        let _ = &p["nope"];
    }

    #[test]
    fn map_and_zip_map() {
        let p: Params = [("a", arr(1.0)), ("b", arr(2.0))].into_iter().collect();
        let q = p.map(|name, a| a.mul(if name == "a" { 10.0 } else { 100.0 })).unwrap();
        q.eval().unwrap();
        assert!(q.values().all(Array::is_evaluated));
        assert_eq!(values(&q), [10.0, 200.0]);
        let s = p.zip_map(&q, |_, x, y| x.add(y)).unwrap();
        assert_eq!(values(&s), [11.0, 202.0]);
        // Errors from the closure pass through.
        let e = p.map(|_, a| a.reshape(&[5])).unwrap_err();
        assert!(matches!(e, Error::Shape { .. }));
        // Different names: an error listing them, and the closure never runs.
        let r: Params = [("a", arr(1.0)), ("c", arr(2.0))].into_iter().collect();
        let e = p.zip_map(&r, |_, _, _| panic!("not called")).unwrap_err();
        let msg = e.to_string();
        assert!(matches!(e, Error::Invalid { .. }) && msg.contains("\"b\"") && msg.contains("\"c\""), "{msg}");
        let fewer: Params = [("a", arr(1.0))].into_iter().collect();
        assert!(p.zip_map(&fewer, |_, x, _| Ok(x.clone())).is_err());
        assert!(fewer.zip_map(&p, |_, x, _| Ok(x.clone())).is_err());
    }

    #[test]
    fn to_vec_from_vec_round_trip() {
        let p: Params = [("b", arr(2.0)), ("a", arr(1.0))].into_iter().collect();
        let (names, arrays) = p.to_vec();
        assert_eq!(names, ["a", "b"]);
        let q = Params::from_vec(names.clone(), arrays).unwrap();
        assert_eq!(q.names(), names);
        assert_eq!(values(&q), [1.0, 2.0]);
        let (n2, a2) = q.into_vec();
        assert_eq!((n2.len(), a2.len()), (2, 2));
        // Any order in, name order out.
        let r = Params::from_vec(["z", "y"], vec![arr(1.0), arr(2.0)]).unwrap();
        assert_eq!(values(&r), [2.0, 1.0]);
        assert!(matches!(Params::from_vec(["a"], vec![]), Err(Error::Invalid { .. })));
        let e = Params::from_vec(["a", "a"], vec![arr(1.0), arr(2.0)]).unwrap_err();
        assert!(e.to_string().contains("\"a\" appears twice"), "{e}");
    }

    #[test]
    fn prefixes() {
        let p: Params = [("w", arr(1.0)), ("b", arr(2.0))].into_iter().collect();
        let mut model = p.with_prefix("layer1");
        model.extend(p.with_prefix("layer10"));
        model.insert("layer1", arr(9.0));
        assert_eq!(model.names(), ["layer1", "layer1.b", "layer1.w", "layer10.b", "layer10.w"]);
        let back = model.strip_prefix("layer1");
        assert_eq!(back.names(), ["b", "w"]);
        assert_eq!(values(&back), [2.0, 1.0]);
        assert!(model.strip_prefix("layer2").is_empty());
    }
}
