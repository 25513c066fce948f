# Does the weights' distribution move a model's power? Swin-T fp16 b16 (torchvision), its
# forward captured in a CUDA graph, timed and measured back to back (capture.py's
# back_to_back: 3 tick-aligned windows of >= 2 s) with (a) torchvision's init (linear
# weights trunc-normal std 0.02) and (b) kc's (uniform +-1/sqrt(fan_in) for every linear
# and convolution weight and bias), alternated a b a b.
import sys, json, torch, torchvision
sys.path.insert(0, "traces")
import capture as c
c.torch = torch
torch.manual_seed(0)
m = torchvision.models.swin_t().half().cuda().eval()
x = torch.randn(16, 3, 224, 224, device="cuda", dtype=torch.half)
orig = {k: v.detach().clone() for k, v in m.state_dict().items()}
def kc_init():
    with torch.no_grad():
        for mod in m.modules():
            if isinstance(mod, (torch.nn.Linear, torch.nn.Conv2d)):
                fan_in = mod.weight[0].numel()
                b = 1.0 / fan_in ** 0.5
                mod.weight.uniform_(-b, b)
                if mod.bias is not None:
                    mod.bias.uniform_(-b, b)
def model_init():
    m.load_state_dict(orig)
out = []
with torch.no_grad():
    for _ in range(3):
        m(x)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            m(x)
    torch.cuda.current_stream().wait_stream(s)
    with torch.cuda.graph(g):
        m(x)
    torch.cuda.synchronize()
    for tag, init in [("model", model_init), ("kc", kc_init), ("model", model_init), ("kc", kc_init)]:
        init()  # in place: the captured graph reads the same storages
        torch.cuda.synchronize()
        for _ in range(20):
            g.replay()
        r = c.back_to_back(g.replay, 3000.0)
        r["init"] = tag
        ws = [p.detach().float() for n, p in m.named_parameters() if "weight" in n and p.dim() == 2]
        r["linear_weight_std"] = float(torch.cat([w.flatten() for w in ws]).std())
        out.append(r)
        print(json.dumps(r), flush=True)
