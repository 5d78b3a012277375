"""Prints the NumPy-computed expectations of tests/suite/indexing.rs
(python3 tests/suite/indexing_cases.py): each s![] beside the NumPy index it spells."""
import numpy as np

def lit(v):
    v = np.asarray(v)
    return "&[" + ", ".join(repr(float(x)) if v.dtype.kind == 'f' else str(int(x)) for x in v.ravel()) + "]"

def shape(v):
    return "&[" + ", ".join(str(d) for d in np.shape(v)) + "]"

a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
print("// slice: (s![...], NumPy index) on arange(24).reshape(2, 3, 4)")
for rust, py in [
    ("1", "1"),
    ("-1, 1.., ..;-2", "-1, 1:, ::-2"),
    (".., ..-1, 1..=2", ":, :-1, 1:3"),
    ("..., 0", "..., 0"),
    ("NewAxis, .., NewAxis, 2", "None, :, None, 2"),
    ("0, ..., NewAxis", "0, ..., None"),
    (".., 0..3;2, 3..0;-1", ":, 0:3:2, 3:0:-1"),
    ("..", ":"),
    ("1, 2, 3", "1, 2, 3"),
    ("5..", "5:"),
    ("..;-1, -2..;-1", "::-1, -2::-1"),
    ("..., ..=-1", "..., :"),
]:
    r = eval(f"a[{py}]")
    print(f"    check(&a.slice(&s![{rust}])?, {shape(r)}, {lit(r)}, \"a[{py}]\");")

x = (np.arange(12, dtype=np.float32) - 5).reshape(3, 4)
print("// masked_select on arange(12).reshape(3, 4) - 5")
print(f"    x[x > 0]: {lit(x[x > 0])}")
print(f"    x[x % 3 == 0] mask {lit((x % 3 == 0).astype(int))}: {lit(x[x % 3 == 0])}")

b = np.arange(12, dtype=np.float32).reshape(3, 4)
print("// at on arange(12).reshape(3, 4)")
def upd(stmt):
    c = b.copy()
    exec(stmt, {"np": np}, {"c": c})
    return lit(c)
print("    c[1:, ::2] = -1:", upd("c[1:, ::2] = -1"))
print("    c[1:, ::2] += [10, 20]:", upd("c[1:, ::2] += np.array([10, 20], np.float32)"))
print("    c[:, -1] *= 3:", upd("c[:, -1] *= 3"))
print("    c[[2, 0]] = [[100..103]]:", upd("c[[2, 0]] = np.array([100, 101, 102, 103], np.float32)"))
print("    np.add.at(c, [0, 0, 2], 1):", upd("np.add.at(c, [0, 0, 2], 1)"))
print("    c[[-1]] = 7:", upd("c[[-1]] = 7"))
print("    c[[1]] *= 2:", upd("c[[1]] *= 2"))
print("    c[[[0], [2]]] = [[1], [2]] (idx shape (2,1)):", upd("c[np.array([[0], [2]])] = np.array([[[1]], [[2]]], np.float32)"))

t = np.array([10, 20, 30, 40], dtype=np.int32)
i = np.array([-1, 7, 2])
print("// take: lazuli's clip counts negatives from the end, then clamps")
print("    take clip:", lit(np.take(t, np.where(i < 0, i + 4, i), mode='clip')))
print("    take raise [-4, 3]:", lit(np.take(t, [-4, 3])))
m = np.arange(8, dtype=np.int32).reshape(2, 4)
print("    take raise axis 1 [3, -1]:", lit(np.take(m, [3, -1], axis=1)))
