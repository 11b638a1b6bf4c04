"""Linear probes of object attributes from regionmac-trace's region features on the first N (160) training
images of the study's mid (ground-truth boxes, pretrained/mid-mini's detector, 4 x 4 RoIs); reads only, writes no cache.
``PYTHONPATH=$PWD .venv/bin/python results/seeing_models/regionmac-trace/probe_features.py [N] [ROI]``."""
import sys, time, torch, numpy as np
torch.set_num_threads(2)
from pathlib import Path
from baselines.regionmac import load_detector, fpn_maps, region_tokens
from nsvqa.artifacts.images import read_image
from nsvqa.artifacts.scenes import read_scenes, scenes_path
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler
N = int(sys.argv[1]) if len(sys.argv) > 1 else 160; roi = int(sys.argv[2]) if len(sys.argv) > 2 else 4
folder = Path("data/generated/study/mid")
t0 = time.time()
scenes = list(read_scenes(scenes_path(folder, "train")))[:N]
print("scenes read", round(time.time() - t0, 1))
det = load_detector("pretrained/mid-mini/scene_parser/detector.pt")
X, Y = [], {a: [] for a in ("color", "material", "shape", "size")}
t0 = time.time()
for a in range(0, N, 16):
    chunk = scenes[a:a + 16]
    imgs = torch.stack([read_image(folder / "images" / "train" / s.image_filename) for s in chunk])
    maps, sized = fpn_maps(det, imgs)
    boxes = [np.asarray(s.boxes(), np.float32).reshape(-1, 4) for s in chunk]
    tok = region_tokens({k: v.half() for k, v in maps.items()}, list(range(len(chunk))), boxes,
                        [np.ones(len(b), np.float32) for b in boxes], (320, 240), sized, roi_size=roi, max_tokens=16,
                        min_score=0.0)
    for r, s in enumerate(chunk):
        for k, o in enumerate(s.record["objects"][:16]):
            X.append(tok[r, k, 7:].numpy()); [Y[at].append(o[at]) for at in Y]
print("features", round(time.time() - t0, 1), "s for", N, "images;", len(X), "objects")
X = StandardScaler().fit_transform(np.array(X))
n = len(X) * 3 // 4
for at, y in Y.items():
    y = np.array(y)
    clf = LogisticRegression(max_iter=300, C=0.1).fit(X[:n], y[:n])
    maj = max(np.mean(y[n:] == v) for v in set(y))
    print(f"{at}: held-out {clf.score(X[n:], y[n:]):.3f} (train {clf.score(X[:n], y[:n]):.3f}, majority {maj:.3f}, {len(set(y))} values)")
