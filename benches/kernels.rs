//! Kernel benchmarks on whatever adapter is found (lavapipe in CI): matmul, conv2d, elementwise,
//! reduction and softmax, each timed as enqueue + block_until_done on device-resident tensors.
//! Matmul and conv report GFLOP/s as criterion "elements" (one element = one FLOP). The matmul
//! group also times a reference: the straightforward 16x16 shared-memory tiled WGSL kernel, on the
//! same device in the same run (issue 5's yardstick for the matmul target).
//!
//!     cargo bench --bench kernels
//!     cargo bench --bench kernels -- matmul     # one group

use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use tensorflow_wgpu::error::{Error, Result};
use tensorflow_wgpu::kernels::{
    binary, conv, matmul, nn, reduce, AttrValue, Attrs, DType, KernelContext, KernelInstance, TensorRef, KERNELS,
};
use tensorflow_wgpu::runtime::{instance, Device, Stream};

/// Device tensors in, outputs allocated on demand: what TF's context does, without TF.
struct BenchContext<'a> {
    device: &'a Arc<Device>,
    stream: &'a Stream,
    inputs: Vec<TensorRef>,
    host_inputs: Vec<Vec<i64>>,
    allocated: Vec<u64>,
}

impl BenchContext<'_> {
    fn alloc(&mut self, dtype: DType, shape: &[i64]) -> Result<TensorRef> {
        let t = TensorRef { address: 0, dtype, shape: shape.to_vec() };
        let address = self.device.memory.allocate(self.device, t.byte_len().max(4))?;
        self.allocated.push(address);
        Ok(TensorRef { address, ..t })
    }
}

impl Drop for BenchContext<'_> {
    fn drop(&mut self) {
        self.stream.block_until_done().unwrap();
        for &a in &self.allocated {
            self.device.memory.free(a).unwrap();
        }
    }
}

impl KernelContext for BenchContext<'_> {
    fn num_inputs(&self) -> usize {
        self.inputs.len()
    }
    fn input(&mut self, index: usize) -> Result<TensorRef> {
        self.inputs.get(index).cloned().ok_or_else(|| Error::internal("no such input"))
    }
    fn allocate_output(&mut self, _index: usize, dtype: DType, shape: &[i64]) -> Result<TensorRef> {
        self.alloc(dtype, shape)
    }
    fn forward_input_or_allocate_output(&mut self, _: &[usize], i: usize, d: DType, s: &[i64]) -> Result<TensorRef> {
        self.allocate_output(i, d, s)
    }
    fn num_outputs(&self) -> usize {
        1
    }
    fn expected_output_dtype(&self, _index: usize) -> Result<DType> {
        Ok(DType::F32)
    }
    fn host_input_values(&mut self, index: usize) -> Result<(Vec<i64>, Vec<i64>)> {
        let v = self.host_inputs.get(index).cloned().unwrap_or_default();
        let len = v.len() as i64;
        Ok((v, vec![len]))
    }
    fn write_host_output(&mut self, _: usize, _: DType, _: &[i64], _: &[u8]) -> Result<()> {
        Err(Error::internal("not used by the benchmarks"))
    }
    fn host_input_floats(&mut self, _index: usize) -> Result<Vec<f64>> {
        Err(Error::internal("not used by the benchmarks"))
    }
    fn allocate_temp(&mut self, dtype: DType, shape: &[i64]) -> Result<TensorRef> {
        self.alloc(dtype, shape)
    }
    fn stream(&mut self) -> Result<&Stream> {
        Ok(self.stream)
    }
}

fn kernel_for(op: &str, attrs: &[(&'static str, AttrValue)]) -> KernelInstance {
    let def = KERNELS.iter().find(|k| k.op == op && k.constraints.iter().all(|&(_, d)| d == DType::F32)).unwrap();
    let mut all = Attrs::default();
    for (name, value) in attrs {
        all.set(name, value.clone());
    }
    KernelInstance::new(def, all)
}

fn filled(device: &Arc<Device>, stream: &Stream, shape: &[i64]) -> TensorRef {
    let t = TensorRef { address: 0, dtype: DType::F32, shape: shape.to_vec() };
    let address = device.memory.allocate(device, t.byte_len()).unwrap();
    let values: Vec<f32> = (0..t.num_elements()).map(|i| ((i * 7919) % 1000) as f32 / 1000.0 - 0.5).collect();
    stream.memcpy_htod(address, bytemuck::cast_slice(&values)).unwrap();
    stream.block_until_done().unwrap();
    TensorRef { address, ..t }
}

fn bench(c: &mut Criterion) {
    let device = instance::device(0).expect("no WGPU adapter");
    let stream = Stream::new(device.clone());
    println!("adapter: {} ({:?})", device.info.name, device.info.backend);
    let run = |compute: fn(&mut dyn KernelContext, &KernelInstance) -> Result<()>,
               kernel: &KernelInstance,
               inputs: &[TensorRef],
               host_inputs: Vec<Vec<i64>>| {
        let mut ctx = BenchContext {
            device: &device,
            stream: &stream,
            inputs: inputs.to_vec(),
            host_inputs,
            allocated: Vec::new(),
        };
        compute(&mut ctx, kernel).unwrap();
    };

    let mut group = c.benchmark_group("matmul f32");
    group.sample_size(10).measurement_time(Duration::from_secs(4)).warm_up_time(Duration::from_secs(1));
    for n in [256i64, 512, 1024, 2048] {
        let a = filled(&device, &stream, &[n, n]);
        let b = filled(&device, &stream, &[n, n]);
        let out = TensorRef { address: device.memory.allocate(&device, (n * n * 4) as u64).unwrap(), ..a.clone() };
        group.throughput(Throughput::Elements((2 * n * n * n) as u64));
        group.bench_function(format!("N={n}"), |bench| {
            bench.iter(|| {
                matmul::launch(&stream, &a, &b, &out, false, false).unwrap();
                stream.block_until_done().unwrap();
            })
        });
    }
    let (a, b) = (filled(&device, &stream, &[1, 1024]), filled(&device, &stream, &[1024, 1024]));
    let out =
        TensorRef { address: device.memory.allocate(&device, 4096).unwrap(), dtype: DType::F32, shape: vec![1, 1024] };
    group.throughput(Throughput::Elements(2 * 1024 * 1024));
    group.bench_function("M=1 K=N=1024 (GEMV)", |bench| {
        bench.iter(|| {
            matmul::launch(&stream, &a, &b, &out, false, false).unwrap();
            stream.block_until_done().unwrap();
        })
    });
    group.finish();

    reference_matmul(c, &device, 1024);

    let mut group = c.benchmark_group("conv2d f32");
    group.sample_size(10).measurement_time(Duration::from_secs(4)).warm_up_time(Duration::from_secs(1));
    let conv2d = kernel_for(
        "Conv2D",
        &[
            ("strides", AttrValue::IntList(vec![1, 1, 1, 1])),
            ("dilations", AttrValue::IntList(vec![1, 1, 1, 1])),
            ("padding", AttrValue::Str("SAME".into())),
            ("explicit_paddings", AttrValue::IntList(vec![])),
            ("data_format", AttrValue::Str("NHWC".into())),
        ],
    );
    for (name, input, filter) in [
        ("3x3 on 8x56x56x64", [8i64, 56, 56, 64], [3i64, 3, 64, 64]),
        ("1x1 on 8x56x56x64", [8, 56, 56, 64], [1, 1, 64, 64]),
    ] {
        let x = filled(&device, &stream, &input);
        let k = filled(&device, &stream, &filter);
        let flops = 2 * input[0] * input[1] * input[2] * filter.iter().product::<i64>();
        group.throughput(Throughput::Elements(flops as u64));
        group.bench_function(name, |bench| bench.iter(|| run(conv::conv, &conv2d, &[x.clone(), k.clone()], vec![])));
    }
    group.finish();

    let mut group = c.benchmark_group("memory-bound f32, 4M elements");
    group.sample_size(10).measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_secs(1));
    let big = filled(&device, &stream, &[1024, 4096]);
    let row = filled(&device, &stream, &[4096]);
    group.throughput(Throughput::Bytes(big.byte_len()));
    let add = kernel_for("AddV2", &[]);
    group.bench_function("AddV2 with a broadcast row", |bench| {
        bench.iter(|| run(binary::compute, &add, &[big.clone(), row.clone()], vec![]))
    });
    let sum = kernel_for("Sum", &[("keep_dims", AttrValue::Bool(false))]);
    group.bench_function("Sum over the last axis", |bench| {
        bench.iter(|| run(reduce::compute, &sum, std::slice::from_ref(&big), vec![vec![], vec![1]]))
    });
    group.bench_function("Sum over the first axis", |bench| {
        bench.iter(|| run(reduce::compute, &sum, std::slice::from_ref(&big), vec![vec![], vec![0]]))
    });
    let softmax = kernel_for("Softmax", &[]);
    group.bench_function("Softmax over rows of 4096", |bench| {
        bench.iter(|| run(nn::softmax, &softmax, std::slice::from_ref(&big), vec![]))
    });
    group.finish();
}

/// The textbook 16x16 shared-memory tiled matmul (one output per invocation), for comparison.
const REFERENCE_MATMUL: &str = r#"
override N: u32 = 1024u;
@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;
var<workgroup> ta: array<f32, 256>;
var<workgroup> tb: array<f32, 256>;
@compute @workgroup_size(16, 16)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    var acc = 0.0;
    for (var t = 0u; t < N / 16u; t++) {
        ta[lid.y * 16u + lid.x] = a[gid.y * N + t * 16u + lid.x];
        tb[lid.y * 16u + lid.x] = b[(t * 16u + lid.y) * N + gid.x];
        workgroupBarrier();
        for (var k = 0u; k < 16u; k++) {
            acc += ta[lid.y * 16u + k] * tb[k * 16u + lid.x];
        }
        workgroupBarrier();
    }
    c[gid.y * N + gid.x] = acc;
}
"#;

fn reference_matmul(c: &mut Criterion, device: &Arc<Device>, n: u32) {
    let module = device.device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("reference matmul"),
        source: wgpu::ShaderSource::Wgsl(REFERENCE_MATMUL.into()),
    });
    let pipeline = device.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("reference matmul"),
        layout: None,
        module: &module,
        entry_point: Some("main"),
        compilation_options: wgpu::PipelineCompilationOptions { constants: &[("N", n as f64)], ..Default::default() },
        cache: None,
    });
    let buffer = |label| {
        device.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size: (n * n * 4) as u64,
            usage: wgpu::BufferUsages::STORAGE,
            mapped_at_creation: false,
        })
    };
    let (a, b, out) = (buffer("reference a"), buffer("reference b"), buffer("reference c"));
    let bind_group = device.device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("reference matmul"),
        layout: &pipeline.get_bind_group_layout(0),
        entries: &[
            wgpu::BindGroupEntry { binding: 0, resource: a.as_entire_binding() },
            wgpu::BindGroupEntry { binding: 1, resource: b.as_entire_binding() },
            wgpu::BindGroupEntry { binding: 2, resource: out.as_entire_binding() },
        ],
    });
    let mut group = c.benchmark_group("matmul f32 reference (16x16 shared-memory tiles)");
    group.sample_size(10).measurement_time(Duration::from_secs(6)).warm_up_time(Duration::from_secs(1));
    group.throughput(Throughput::Elements(2 * (n as u64).pow(3)));
    group.bench_function(format!("N={n}"), |bench| {
        bench.iter(|| {
            let mut encoder = device
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("reference matmul") });
            {
                let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some("reference matmul"),
                    timestamp_writes: None,
                });
                pass.set_pipeline(&pipeline);
                pass.set_bind_group(0, &bind_group, &[]);
                pass.dispatch_workgroups(n / 16, n / 16, 1);
            }
            device.queue.submit([encoder.finish()]);
            device.device.poll(wgpu::PollType::wait_indefinitely()).unwrap();
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
