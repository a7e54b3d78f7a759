/* The call site: where a sandboxed process makes, times and captures one call.
 *
 * The invariant this file exists for (DEVELOPERS.md, "Threat model"):
 *
 *   From the moment a call's inputs enter the process to the moment its outputs' bytes have left
 *   it, no Python code runs in this thread except the call itself.
 *
 * `call()` holds the GIL throughout, blocks every signal on this thread and disables Python's
 * garbage collector, except while the callable runs. Its inputs arrive inside that window, as bytes
 * read from a pipe the reference process writes (so nothing the candidate registered earlier can
 * see them before the timer starts), and the outputs' bytes are written to another pipe before the
 * window closes, through DLPack pointers and memcpy / the CUDA driver, never through a torch
 * operator. So no torch.library kernel, dispatch or function mode, signal handler or interval
 * timer, trace or profile function, audit hook, gc callback, finalizer, import hook or other Python
 * thread can run between the call's completion and the capture of what it returned: bytes written
 * later are not the bytes compared. Native code the candidate compiled runs in this process too and
 * is not confined by this (it can write any memory); the OS sandbox bounds what it can reach.
 *
 * Plain C with the Python C API and the CUDA driver API (loaded with dlopen), so the parent builds
 * it in a second with the host's C compiler, on a GPU host and a CPU host alike.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- DLPack (the ABI of dlpack.h, version 0.8: the layout torch._C._to_dlpack hands out) ---- */

typedef struct { int32_t device_type; int32_t device_id; } DLDevice;
typedef struct { uint8_t code; uint8_t bits; uint16_t lanes; } DLDataType;
typedef struct {
    void *data;
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t *shape;
    int64_t *strides;
    uint64_t byte_offset;
} DLTensor;
typedef struct DLManagedTensor {
    DLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;

enum { kDLCPU = 1, kDLCUDA = 2 };

/* ---- the CUDA driver API, the few entry points used ---- */

typedef int CUresult;
typedef void *CUevent;
typedef void *CUstream;
typedef void *CUcontext;
typedef unsigned long long CUdeviceptr;

static struct {
    CUresult (*ctxSynchronize)(void);
    CUresult (*ctxGetCurrent)(CUcontext *);
    CUresult (*eventCreate)(CUevent *, unsigned int);
    CUresult (*eventRecord)(CUevent, CUstream);
    CUresult (*eventSynchronize)(CUevent);
    CUresult (*eventElapsedTime)(float *, CUevent, CUevent);
    CUresult (*memAlloc)(CUdeviceptr *, size_t);
    CUresult (*memsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream);
    CUresult (*memsetD8)(CUdeviceptr, unsigned char, size_t);
    CUresult (*memcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*memcpyHtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*memcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
    CUresult (*memcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
    CUresult (*memAllocHost)(void **, size_t);
    CUresult (*getErrorString)(CUresult, const char **);
    CUresult (*streamWaitValue32)(CUstream, CUdeviceptr, uint32_t, unsigned int); /* NULL: no gate on this driver */
    CUresult (*memHostGetDevicePointer)(CUdeviceptr *, void *, unsigned int);
} cu;

/* ---- frames on the capture and input pipes ---- */

#define FRAME_MAGIC 0x3146434bu /* "KCF1" */
enum { FRAME_READY = 1, FRAME_INPUTS = 2, FRAME_OUTPUTS = 3, FRAME_END = 4 };
typedef struct { uint32_t magic; uint32_t kind; uint64_t length; uint64_t sequence; } FrameHeader;

/* What the parent reads of each call, written here inside the window: the times, and which inputs
 * the call wrote to. Python code in this process never handles it, and none can forge it: each record
 * carries a SipHash-2-4 tag under a key only this file and the parent hold (read from a private file
 * descriptor at init, before any user code, and kept in this file's static memory, which the process's
 * own Python cannot read: the sandbox refuses it /proc/self/mem). A record written by anything else
 * fails the parent's check. */
#define TIMING_MAGIC 0x3354434bu /* "KCT3" */
typedef struct {
    uint32_t magic; uint32_t flags; uint64_t sequence;
    double ms, stream_ms, host_ms;
    uint64_t inputs_modified; /* bit i: input slot i changed; bit 63: a slot beyond 62 */
    double idle_ms;           /* a burst's call: from its end to the device drained (`settled`), less the same gap
                               * after work of the harness's own (`floor`); the burst's end: a device-wide
                               * synchronize of the idle device, for scale */
    double floor_ms;          /* a burst's call on CUDA: the `floor` itself, the harness's own write's gap (-1 where
                               * none): work run on the device while the harness waits for it lengthens it */
    uint64_t tag;             /* SipHash-2-4 of the bytes above under the record key */
} TimingRecord;

/* ---- SipHash-2-4 (Aumasson and Bernstein), the records' tag ---- */

static uint64_t record_key[2];

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND do { v0 += v1; v1 = ROTL(v1, 13); v1 ^= v0; v0 = ROTL(v0, 32); v2 += v3; v3 = ROTL(v3, 16); v3 ^= v2; \
                      v0 += v3; v3 = ROTL(v3, 21); v3 ^= v0; v2 += v1; v1 = ROTL(v1, 17); v1 ^= v2; v2 = ROTL(v2, 32); } while (0)

static uint64_t siphash(const unsigned char *in, size_t n, const uint64_t key[2]) {
    uint64_t v0 = 0x736f6d6570736575ull ^ key[0], v1 = 0x646f72616e646f6dull ^ key[1];
    uint64_t v2 = 0x6c7967656e657261ull ^ key[0], v3 = 0x7465646279746573ull ^ key[1];
    size_t whole = n - n % 8;
    for (size_t i = 0; i < whole; i += 8) {
        uint64_t m;
        memcpy(&m, in + i, 8); /* little-endian hosts only (x86-64, aarch64) */
        v3 ^= m; SIPROUND; SIPROUND; v0 ^= m;
    }
    uint64_t last = (uint64_t)n << 56;
    for (size_t i = 0; i < n % 8; i++) last |= (uint64_t)in[whole + i] << (8 * i);
    v3 ^= last; SIPROUND; SIPROUND; v0 ^= last;
    v2 ^= 0xff; SIPROUND; SIPROUND; SIPROUND; SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}
enum { TIMED_OK = 1, TIMED_RAISED = 2, TIMED_CAPTURED = 4, TIMED_CUDA = 8, TIMED_BURST = 16, TIMED_BURST_END = 32,
       TIMED_UNGATED = 64 };

#define MAX_LEAVES 256
#define MAX_DEPTH 32
#define MAX_SLOTS 256
#define MAX_BURST 256
#define PINNED_CHUNKS 64

typedef struct {
    PyObject *tensor;     /* a strong reference until the next call has poisoned its memory */
    int device_type;
    char *first;          /* address of element 0 */
    int64_t ndim;
    int64_t shape[16];
    int64_t strides[16];
    int64_t itemsize;
    uint64_t nbytes;      /* gathered bytes, row-major */
    char *span_lo, *span_hi;
    uint64_t digest;
    char *staged;         /* burst: where the span's bytes land on the host once the stream reaches the copy */
    uint64_t placed;      /* burst: offset of the leaf's bytes in the outputs buffer */
} Leaf;

/* One call of a burst: its events, its host time, what it returned, where its outputs frame is. */
typedef struct {
    CUevent start, end, settled, floor_end, floor_settled;
    double host_ms;
    PyObject *result;
    size_t out_offset, out_length;
    char *inputs, *readback; /* the inputs as they came, and as they were after the call (burst, CUDA) */
    uint64_t modified;       /* CPU: the slots the call wrote to, compared at once */
    int captured;
    int ungated;             /* the device did not wait for the host to have issued the whole call */
} BurstCall;

typedef struct { char *data; size_t size, used; } Chunk;

static struct {
    int ready;
    int cuda;
    PyObject *tensor_type;   /* torch.Tensor, exactly */
    PyObject *to_dlpack;     /* torch._C._to_dlpack */
    int capture_fd, input_fd, timing_fd;
    struct stat capture_id, input_id, timing_id;  /* the pipes the fds named at init */
    int poison_outputs;
    int every_call_captured;  /* the candidate's call site: inputs always from the pipe, outputs always captured */
    uint64_t max_output_bytes;
    uint64_t sequence;
    char *flush_host; CUdeviceptr flush_device; size_t flush_bytes; unsigned char flush_value;
    CUevent start, returned, end;
    char *host; size_t host_size;       /* staging for device copies and outgoing frames */
    char *scratch; size_t scratch_size; /* read-back of inputs after a call */
    char *inputs; size_t inputs_size;   /* the call's input bytes, as they came */
    Leaf *leaves; int leaf_count, leaf_capacity, call_leaf0;
    char *out; size_t out_size, out_used;
    int deferred;                        /* in a burst: device copies are enqueued, not waited for */
    Chunk pinned[PINNED_CHUNKS];         /* page-locked host memory for a burst's asynchronous copies */
    BurstCall burst[MAX_BURST]; int burst_events;
    CUevent tail;                        /* after the last call's own queued copies: where the leftover starts */
    CUdeviceptr burst_flush; size_t burst_flush_bytes;
} S;

/* The gate (CUDA bursts): before a call's inputs are uploaded the calling stream waits on a word of
 * page-locked host memory (cuStreamWaitValue32), which the host writes only once the call has returned,
 * so the device runs a call's launches back to back however slowly the host issued them: the interval
 * holds the device's work, not the host's issuing. A call that waits for the device itself (a
 * synchronize, a copy to the host) would wait for the gate forever: a watchdog thread opens it after
 * GATE_TIMEOUT_MS, and that call is reported ungated. */
#define GATE_TIMEOUT_MS 20

static struct {
    volatile uint32_t *word;   /* page-locked; the device reads it */
    CUdeviceptr device;
    uint32_t next;             /* the value the next gate waits for */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int armed;
    uint32_t armed_value, forced_value;
    struct timespec deadline;
} G = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* A burst's flush writes at least this much: as long as triton.testing.do_bench's (256 MiB, ~0.1 ms on
 * an H100), so the host has issued a call's launches before the GPU reaches its start event, and the
 * interval holds the GPU's work rather than the host issuing it one launch at a time. */
#define BURST_FLUSH_BYTES ((size_t)256 << 20)
/* The write each burst call's drain is matched against (`floor`): ~10 us on an H100, longer than the host
 * takes to reach its synchronize, so the host waits for it as it waits for a call. */
#define FLOOR_BYTES ((size_t)32 << 20)

static PyObject *Fault;    /* a fault of the call site itself: the harness reports it */
static PyObject *Tampered; /* something of the call site's was replaced: the candidate is rejected for it */

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Whether `fd` still names the pipe it named at init. The fd numbers are no secret (the candidate's
 * process can read them), so a candidate could dup2 another file over one and write the harness's
 * records itself: every read and write checks the pipe's identity first. */
static int same_pipe(int fd, const struct stat *expected, const char *what) {
    struct stat now;
    if (fstat(fd, &now) != 0 || now.st_dev != expected->st_dev || now.st_ino != expected->st_ino) {
        PyErr_Format(Tampered, "the call site's %s was replaced: its file descriptor names another file than the "
                     "harness gave it", what);
        return 0;
    }
    return 1;
}

static int cu_ok(CUresult r, const char *what) {
    if (r == 0) return 1;
    const char *text = "unknown";
    if (cu.getErrorString) cu.getErrorString(r, &text);
    PyErr_Format(Fault, "CUDA driver call %s failed: %s (%d)", what, text, r);
    return 0;
}

static int grow(char **buffer, size_t *size, size_t wanted) {
    if (*size >= wanted) return 1;
    size_t size_new = wanted + wanted / 4 + 4096;
    char *p = realloc(*buffer, size_new);
    if (!p) { PyErr_NoMemory(); return 0; }
    *buffer = p; *size = size_new;
    return 1;
}

static int write_all(int fd, const char *data, size_t n) {
    while (n) {
        ssize_t w = write(fd, data, n > (1u << 30) ? (1u << 30) : n);
        if (w < 0) {
            if (errno == EINTR) continue;
            PyErr_Format(Fault, "writing to the capture pipe failed: %s", strerror(errno));
            return 0;
        }
        data += w; n -= (size_t)w;
    }
    return 1;
}

static int read_all(int fd, char *data, size_t n) {
    while (n) {
        ssize_t r = read(fd, data, n > (1u << 30) ? (1u << 30) : n);
        if (r < 0) {
            if (errno == EINTR) continue;
            PyErr_Format(Fault, "reading the inputs pipe failed: %s", strerror(errno));
            return 0;
        }
        if (r == 0) { PyErr_SetString(Fault, "the inputs pipe closed mid-frame"); return 0; }
        data += r; n -= (size_t)r;
    }
    return 1;
}

static uint64_t digest_bytes(const char *p, size_t n) {
    uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 29;
    }
    for (; i < n; i++) h = (h ^ (unsigned char)p[i]) * 0x100000001b3ull;
    return h ^ (h >> 31);
}

/* ---- the window: signals blocked, gc off ---- */

typedef struct { sigset_t mask; int gc_was_enabled; } Window;

static void close_window(Window *w) {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &w->mask);
    w->gc_was_enabled = PyGC_Disable();
}

static void open_window(Window *w) {
    if (w->gc_was_enabled) PyGC_Enable();
    pthread_sigmask(SIG_SETMASK, &w->mask, NULL);
}

/* ---- reading a tensor through DLPack ---- */

static DLManagedTensor *export_tensor(PyObject *tensor, PyObject **capsule) {
    *capsule = PyObject_CallOneArg(S.to_dlpack, tensor);
    if (!*capsule) return NULL;
    DLManagedTensor *managed = PyCapsule_GetPointer(*capsule, "dltensor");
    if (!managed) { Py_CLEAR(*capsule); return NULL; }
    return managed;
}

static int describe_leaf(DLTensor *t, Leaf *leaf, char *why, size_t why_size) {
    if (t->ndim > 16) { snprintf(why, why_size, "a tensor of %d dimensions", t->ndim); return 0; }
    if (t->dtype.lanes != 1 || t->dtype.bits % 8) { snprintf(why, why_size, "an unsupported element type"); return 0; }
    if (t->device.device_type != kDLCPU && t->device.device_type != kDLCUDA) {
        snprintf(why, why_size, "a tensor on device type %d", t->device.device_type);
        return 0;
    }
    leaf->device_type = t->device.device_type;
    leaf->ndim = t->ndim;
    leaf->itemsize = t->dtype.bits / 8;
    leaf->first = (char *)t->data + t->byte_offset;
    int64_t numel = 1, reach = 0, contiguous_stride = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        int64_t n = t->shape[d];
        int64_t s = t->strides ? t->strides[d] : contiguous_stride;
        leaf->shape[d] = n;
        leaf->strides[d] = s;
        contiguous_stride *= n;
        numel *= n;
        if (s < 0) { snprintf(why, why_size, "a tensor with a negative stride"); return 0; }
        if (n > 0) reach += s * (n - 1);
    }
    leaf->nbytes = (uint64_t)numel * (uint64_t)leaf->itemsize;
    leaf->span_lo = leaf->first;
    leaf->span_hi = numel ? leaf->first + (reach + 1) * leaf->itemsize : leaf->first;
    return 1;
}

static int is_contiguous(const Leaf *leaf) {
    int64_t expected = 1;
    for (int d = (int)leaf->ndim - 1; d >= 0; d--) {
        if (leaf->shape[d] != 1 && leaf->strides[d] != expected) return 0;
        expected *= leaf->shape[d];
    }
    return 1;
}

/* Row-major gather of a strided view from `base` (host memory holding the span from span_lo). */
static void gather(const Leaf *leaf, const char *base, char *out) {
    int64_t index[16] = {0};
    int64_t numel = leaf->nbytes / leaf->itemsize;
    for (int64_t i = 0; i < numel; i++) {
        int64_t offset = 0;
        for (int d = 0; d < leaf->ndim; d++) offset += index[d] * leaf->strides[d];
        memcpy(out + i * leaf->itemsize, base + offset * leaf->itemsize, leaf->itemsize);
        for (int d = (int)leaf->ndim - 1; d >= 0; d--) {
            if (++index[d] < leaf->shape[d]) break;
            index[d] = 0;
        }
    }
}

/* The leaf's bytes, row-major, into `out` (nbytes long). */
static int read_leaf(const Leaf *leaf, char *out) {
    if (!leaf->nbytes) return 1;
    size_t span = (size_t)(leaf->span_hi - leaf->span_lo);
    if (leaf->device_type == kDLCPU) {
        if (is_contiguous(leaf)) memcpy(out, leaf->first, leaf->nbytes);
        else gather(leaf, leaf->first, out);
        return 1;
    }
    if (is_contiguous(leaf))
        return cu_ok(cu.memcpyDtoH(out, (CUdeviceptr)leaf->first, leaf->nbytes), "cuMemcpyDtoH");
    if (!grow(&S.scratch, &S.scratch_size, span)) return 0;
    if (!cu_ok(cu.memcpyDtoH(S.scratch, (CUdeviceptr)leaf->span_lo, span), "cuMemcpyDtoH")) return 0;
    gather(leaf, S.scratch, out);
    return 1;
}

/* ---- page-locked memory for a burst's asynchronous copies ---- */

/* `n` bytes of page-locked host memory until the burst ends (pinned_reset). Chunks are kept for the
 * next burst: allocating page-locked memory takes milliseconds. */
static char *pinned_alloc(size_t n) {
    n = (n + 255) & ~(size_t)255;
    for (int i = 0; i < PINNED_CHUNKS; i++) {
        Chunk *c = &S.pinned[i];
        if (!c->data) {
            size_t size = n > ((size_t)64 << 20) ? n : ((size_t)64 << 20);
            void *p = NULL;
            if (!cu_ok(cu.memAllocHost(&p, size), "cuMemAllocHost")) return NULL;
            c->data = p; c->size = size; c->used = 0;
        }
        if (c->size - c->used >= n) {
            char *p = c->data + c->used;
            c->used += n;
            return p;
        }
    }
    PyErr_SetString(Fault, "a burst needs more page-locked memory than the call site keeps");
    return NULL;
}

static void pinned_reset(void) {
    for (int i = 0; i < PINNED_CHUNKS; i++) S.pinned[i].used = 0;
}

/* ---- the outputs frame ---- */

static int emit(const void *data, size_t n) {
    if (!grow(&S.out, &S.out_size, S.out_used + n)) return 0;
    memcpy(S.out + S.out_used, data, n);
    S.out_used += n;
    return 1;
}

static int emit_text(char tag, const char *text, Py_ssize_t n) {
    uint32_t length = (uint32_t)n;
    return emit(&tag, 1) && emit(&length, 4) && emit(text, (size_t)n);
}

static int emit_note(char tag, const char *text) { return emit_text(tag, text, (Py_ssize_t)strlen(text)); }

static int emit_value(PyObject *value, int depth);

static int emit_tensor(PyObject *value) {
    char why[200];
    if (S.leaf_count - S.call_leaf0 >= MAX_LEAVES) return emit_note('X', "more output tensors than the harness reads");
    if (S.leaf_count == S.leaf_capacity) {
        int capacity = S.leaf_capacity ? 2 * S.leaf_capacity : MAX_LEAVES;
        Leaf *grown = realloc(S.leaves, sizeof(Leaf) * (size_t)capacity);
        if (!grown) { PyErr_NoMemory(); return 0; }
        S.leaves = grown;
        S.leaf_capacity = capacity;
    }
    PyObject *capsule;
    DLManagedTensor *managed = export_tensor(value, &capsule);
    if (!managed) {
        /* to_dlpack refused it (torch's message says why): a fact, not a fault of the harness. */
        PyObject *type, *exc, *tb;
        PyErr_Fetch(&type, &exc, &tb);
        Py_XDECREF(type); Py_XDECREF(exc); Py_XDECREF(tb);
        return emit_note('X', "a tensor DLPack cannot export");
    }
    Leaf *leaf = &S.leaves[S.leaf_count];
    DLTensor *t = &managed->dl_tensor;
    int described = describe_leaf(t, leaf, why, sizeof why);
    DLDataType dtype = t->dtype;
    if (!described || (leaf->device_type == kDLCUDA) != S.cuda) {
        if (described) snprintf(why, sizeof why, "a tensor on another device than the call's");
        Py_DECREF(capsule);
        return emit_text('X', why, (Py_ssize_t)strlen(why));
    }
    if (leaf->nbytes > S.max_output_bytes) {
        Py_DECREF(capsule);
        snprintf(why, sizeof why, "a tensor of %llu bytes, beyond the %llu the harness reads",
                 (unsigned long long)leaf->nbytes, (unsigned long long)S.max_output_bytes);
        return emit_text('X', why, (Py_ssize_t)strlen(why));
    }
    char tag = 'T';
    uint8_t head[4] = {dtype.code, dtype.bits, (uint8_t)leaf->device_type, (uint8_t)leaf->ndim};
    uint64_t address = (uint64_t)(uintptr_t)leaf->first;
    int ok = emit(&tag, 1) && emit(head, 4) && emit(leaf->shape, 8 * leaf->ndim) && emit(leaf->strides, 8 * leaf->ndim)
             && emit(&address, 8) && emit(&leaf->nbytes, 8) && grow(&S.out, &S.out_size, S.out_used + leaf->nbytes);
    leaf->staged = NULL;
    if (ok && S.deferred && leaf->device_type == kDLCUDA) {
        /* A burst: the span's copy is queued on the calling stream behind the call, so it reads the bytes
         * the call left there; they are gathered into the frame once the burst is over. */
        leaf->placed = S.out_used;
        size_t span = (size_t)(leaf->span_hi - leaf->span_lo);
        ok = (leaf->staged = pinned_alloc(span)) != NULL
             && (!span || cu_ok(cu.memcpyDtoHAsync(leaf->staged, (CUdeviceptr)leaf->span_lo, span, NULL), "cuMemcpyDtoHAsync"));
    } else if (ok) {
        ok = read_leaf(leaf, S.out + S.out_used);
        if (ok) leaf->digest = digest_bytes(S.out + S.out_used, leaf->nbytes);
    }
    if (ok) {
        S.out_used += leaf->nbytes;
        Py_INCREF(value);
        leaf->tensor = value;
        S.leaf_count++;
    }
    Py_DECREF(capsule);
    return ok;
}

static int emit_value(PyObject *value, int depth) {
    if (depth > MAX_DEPTH) return emit_note('X', "an output nested too deeply");
    if (Py_IS_TYPE(value, (PyTypeObject *)S.tensor_type)) return emit_tensor(value);
    /* Tuple subclasses too (torch.return_types.max, named tuples): their items are read from the
     * tuple's own array, never through a method of theirs. */
    if (PyTuple_Check(value) || PyList_CheckExact(value)) {
        char tag = PyTuple_Check(value) ? '(' : '[';
        Py_ssize_t n = PySequence_Fast_GET_SIZE(value);
        uint32_t count = (uint32_t)n;
        if (!emit(&tag, 1) || !emit(&count, 4)) return 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            if (i >= PySequence_Fast_GET_SIZE(value)) return emit_note('X', "a list that changed while read");
            if (!emit_value(PySequence_Fast_GET_ITEM(value, i), depth + 1)) return 0;
        }
        return 1;
    }
    if (PyDict_CheckExact(value)) {
        char tag = '{';
        uint32_t count = (uint32_t)PyDict_GET_SIZE(value);
        if (!emit(&tag, 1) || !emit(&count, 4)) return 0;
        Py_ssize_t position = 0;
        PyObject *key, *item;
        uint32_t seen = 0;
        while (PyDict_Next(value, &position, &key, &item) && seen < count) {
            seen++;
            if (PyLong_CheckExact(key)) {
                int overflow = 0;
                long long number = PyLong_AsLongLongAndOverflow(key, &overflow);
                char text[32];
                if (overflow || (number == -1 && PyErr_Occurred())) { PyErr_Clear(); text[0] = 0; }
                else snprintf(text, sizeof text, "%lld", number);
                if (!emit_note('J', text)) return 0;
            } else if (!PyUnicode_CheckExact(key)) {
                if (!emit_note('K', "")) return 0;
            } else {
                Py_ssize_t n;
                const char *text = PyUnicode_AsUTF8AndSize(key, &n);
                if (!text) { PyErr_Clear(); text = ""; n = 0; }
                if (!emit_text('K', text, n)) return 0;
            }
            if (!emit_value(item, depth + 1)) return 0;
        }
        for (; seen < count; seen++)
            if (!emit_note('K', "") || !emit_note('X', "a dict that changed while read")) return 0;
        return 1;
    }
    if (value == Py_None) { char tag = 'N'; return emit(&tag, 1); }
    if (value == Py_True || value == Py_False) {
        char tag = 'B'; uint8_t b = value == Py_True;
        return emit(&tag, 1) && emit(&b, 1);
    }
    if (PyFloat_CheckExact(value)) {
        char tag = 'F'; double d = PyFloat_AS_DOUBLE(value);
        return emit(&tag, 1) && emit(&d, 8);
    }
    if (PyLong_CheckExact(value)) {
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
        if (overflow || (v == -1 && PyErr_Occurred())) { PyErr_Clear(); return emit_note('X', "an integer beyond 64 bits"); }
        char tag = 'I'; int64_t i = v;
        return emit(&tag, 1) && emit(&i, 8);
    }
    const char *name = Py_TYPE(value)->tp_name;
    return emit_text('O', name, (Py_ssize_t)strlen(name));
}

static int send_frame_as(uint32_t kind, const char *payload, uint64_t length, uint64_t sequence) {
    FrameHeader header = {FRAME_MAGIC, kind, length, sequence};
    if (!same_pipe(S.capture_fd, &S.capture_id, "capture pipe")) return 0;
    return write_all(S.capture_fd, (const char *)&header, sizeof header) && write_all(S.capture_fd, payload, length);
}

static int send_frame(uint32_t kind, const char *payload, uint64_t length) {
    return send_frame_as(kind, payload, length, S.sequence);
}

/* ---- the input slots: the harness's own empty tensors, filled inside the window ---- */

typedef struct { char *data; uint64_t nbytes; int device_type; } Slot;

static int read_slots(PyObject *slots, Slot *slot, Py_ssize_t count, uint64_t *total) {
    *total = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *tensor = PyTuple_GET_ITEM(slots, i);
        if (!Py_IS_TYPE(tensor, (PyTypeObject *)S.tensor_type)) {
            PyErr_SetString(Tampered, "an input slot is not exactly a torch.Tensor: the harness's allocation was tampered with");
            return 0;
        }
        PyObject *capsule;
        DLManagedTensor *managed = export_tensor(tensor, &capsule);
        if (!managed) return 0;
        Leaf leaf;
        char why[200];
        int ok = describe_leaf(&managed->dl_tensor, &leaf, why, sizeof why);
        Py_DECREF(capsule);  /* the slot tuple keeps the tensor alive */
        if (!ok || !is_contiguous(&leaf) || (leaf.device_type == kDLCUDA) != S.cuda) {
            PyErr_SetString(Tampered, "an input slot is not a contiguous tensor on the call's device: the harness's allocation was tampered with");
            return 0;
        }
        slot[i].data = leaf.first;
        slot[i].nbytes = leaf.nbytes;
        slot[i].device_type = leaf.device_type;
        *total += leaf.nbytes;
    }
    return 1;
}

/* A call's inputs: READY goes out with the sequence the call will have, and the reference process
 * answers with the call's INPUTS, filled into the slots, or (a burst, where `ended` is given) with END.
 * A burst's length is the parent's secret: the call site learns that a call was the last only after it
 * has returned. In a burst (`call` given) on CUDA the bytes land in page-locked memory kept until the
 * burst ends, so the upload is queued on the stream rather than waited for, as is the read-back after
 * the call (which inputs it wrote to); a single call's are uploaded at once. */
static int take_inputs(Slot *slot, Py_ssize_t count, uint64_t total, uint64_t sequence, BurstCall *call, int *ended) {
    FrameHeader ready = {FRAME_MAGIC, FRAME_READY, 0, sequence};
    if (ended) *ended = 0;
    if (!same_pipe(S.capture_fd, &S.capture_id, "capture pipe") || !same_pipe(S.input_fd, &S.input_id, "inputs pipe"))
        return 0;
    if (!write_all(S.capture_fd, (const char *)&ready, sizeof ready)) return 0;
    FrameHeader header;
    if (!read_all(S.input_fd, (char *)&header, sizeof header)) return 0;
    if (ended && header.magic == FRAME_MAGIC && header.kind == FRAME_END && header.length == 0 && header.sequence == sequence) {
        *ended = 1;
        return 1;
    }
    if (header.magic != FRAME_MAGIC || header.kind != FRAME_INPUTS || header.length != total || header.sequence != sequence) {
        PyErr_Format(Tampered, "the inputs frame does not match the call's input slots (%llu bytes for %llu)",
                     (unsigned long long)header.length, (unsigned long long)total);
        return 0;
    }
    int queued = call && S.cuda;
    char *bytes;
    if (queued) {
        bytes = call->inputs; /* page-locked, reserved by the burst before its gate closed */
    } else {
        if (!grow(&S.inputs, &S.inputs_size, total)) return 0;
        bytes = S.inputs;
        if (call) { call->inputs = S.inputs; call->readback = NULL; }
    }
    if (!read_all(S.input_fd, bytes, total)) return 0;
    uint64_t offset = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        CUdeviceptr device = (CUdeviceptr)slot[i].data;
        if (slot[i].device_type == kDLCPU) memcpy(slot[i].data, bytes + offset, slot[i].nbytes);
        else if (slot[i].nbytes && !(queued ? cu_ok(cu.memcpyHtoDAsync(device, bytes + offset, slot[i].nbytes, NULL), "cuMemcpyHtoDAsync")
                                            : cu_ok(cu.memcpyHtoD(device, bytes + offset, slot[i].nbytes), "cuMemcpyHtoD")))
            return 0;
        offset += slot[i].nbytes;
    }
    return 1;
}

/* Indices of the slots whose bytes differ from what came in: the call wrote to its inputs. */
static PyObject *modified_slots(Slot *slot, Py_ssize_t count) {
    PyObject *modified = PyList_New(0);
    if (!modified) return NULL;
    uint64_t offset = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        const char *now = slot[i].data;
        if (slot[i].device_type == kDLCUDA && slot[i].nbytes) {
            if (!grow(&S.scratch, &S.scratch_size, slot[i].nbytes)
                || !cu_ok(cu.memcpyDtoH(S.scratch, (CUdeviceptr)slot[i].data, slot[i].nbytes), "cuMemcpyDtoH")) {
                Py_DECREF(modified);
                return NULL;
            }
            now = S.scratch;
        }
        if (slot[i].nbytes && memcmp(now, S.inputs + offset, slot[i].nbytes)) {
            PyObject *index = PyLong_FromSsize_t(i);
            if (!index || PyList_Append(modified, index) < 0) { Py_XDECREF(index); Py_DECREF(modified); return NULL; }
            Py_DECREF(index);
        }
        offset += slot[i].nbytes;
    }
    return modified;
}

/* Captured outputs from `first` on, overwritten with 0xff bytes (NaN for every float type), unless
 * the reference itself returns memory its model keeps (decided at init, before any user code): an
 * output stored and returned again holds poison, not the answer it held when it was captured. In a
 * burst (`queued`) the overwrite is queued on the stream behind the capture; otherwise it is done at
 * once. The call site holds each captured tensor until it is poisoned, so the memory it writes is still
 * that output's. */
static int poison(int first, int queued) {
    if (!S.poison_outputs) return 1;
    for (int i = first; i < S.leaf_count; i++) {
        Leaf *leaf = &S.leaves[i];
        size_t span = (size_t)(leaf->span_hi - leaf->span_lo);
        if (!span) continue;
        if (leaf->device_type == kDLCPU) memset(leaf->span_lo, 0xff, span);
        else if (!(queued ? cu_ok(cu.memsetD8Async((CUdeviceptr)leaf->span_lo, 0xff, span, NULL), "cuMemsetD8Async")
                          : cu_ok(cu.memsetD8((CUdeviceptr)leaf->span_lo, 0xff, span), "cuMemsetD8")))
            return 0;
    }
    return 1;
}

static void release_leaves(void) {
    for (int i = 0; i < S.leaf_count; i++) Py_CLEAR(S.leaves[i].tensor);
    S.leaf_count = S.call_leaf0 = 0;
}

/* The previous call's captured outputs, poisoned and let go before the next call. */
static int poison_previous(void) {
    int ok = poison(0, 0);
    release_leaves();
    return ok;
}

/* The cache flush before a call: `device_bytes` of `device` written on the calling stream (CUDA), or
 * the host buffer (CPU). */
static int flush(CUdeviceptr device, size_t device_bytes) {
    S.flush_value++;
    if (S.cuda)
        return !device_bytes || cu_ok(cu.memsetD8Async(device, S.flush_value, device_bytes, NULL), "cuMemsetD8Async");
    if (S.flush_bytes) memset(S.flush_host, S.flush_value, S.flush_bytes);
    return 1;
}

/* The exception set now, taken out of the interpreter with its traceback. */
static PyObject *fetch_error(void) {
    PyObject *type, *error, *tb;
    PyErr_Fetch(&type, &error, &tb);
    PyErr_NormalizeException(&type, &error, &tb);
    if (error && tb) PyException_SetTraceback(error, tb);
    Py_XDECREF(type);
    Py_XDECREF(tb);
    return error;
}

/* A device-wide synchronize after a call. Released while waiting: a host function the call enqueued may
 * need the GIL to finish; then once more with the GIL held, so nothing launched while it was free is left out. */
static CUresult drain(void) {
    CUresult r;
    Py_BEGIN_ALLOW_THREADS
    r = cu.ctxSynchronize();
    Py_END_ALLOW_THREADS
    return r == 0 ? cu.ctxSynchronize() : r;
}

/* A failed synchronize after the calls: the calls' own failure, surfacing there (the candidate's, not
 * the harness's), unless one of them raised already. */
static void error_after_sync(CUresult r, PyObject **error) {
    if (r == 0 || *error) return;
    const char *text = "unknown";
    cu.getErrorString(r, &text);
    PyErr_Format(PyExc_RuntimeError, "CUDA error after the call: %s", text);
    *error = fetch_error();
}

static int write_record(uint32_t flags, uint64_t sequence, double ms, double stream_ms, double host_ms, uint64_t modified,
                        double idle_ms, double floor_ms) {
    if (S.timing_fd < 0) return 1;
    TimingRecord record = {TIMING_MAGIC, flags | (S.cuda ? TIMED_CUDA : 0), sequence, ms, stream_ms, host_ms, modified, idle_ms,
                           floor_ms, 0};
    record.tag = siphash((const unsigned char *)&record, offsetof(TimingRecord, tag), record_key);
    return same_pipe(S.timing_fd, &S.timing_id, "timing pipe") && write_all(S.timing_fd, (const char *)&record, sizeof record);
}

/* ---- the gate ---- */

static void gate_write(uint32_t value) { __atomic_store_n(G.word, value, __ATOMIC_SEQ_CST); }

static void *gate_watchdog(void *unused) {
    (void)unused;
    pthread_mutex_lock(&G.lock);
    for (;;) {
        while (!G.armed) pthread_cond_wait(&G.cond, &G.lock);
        uint32_t value = G.armed_value;
        int r = 0;
        while (G.armed && G.armed_value == value && r != ETIMEDOUT) r = pthread_cond_timedwait(&G.cond, &G.lock, &G.deadline);
        if (G.armed && G.armed_value == value) {
            gate_write(value);
            G.forced_value = value;
            G.armed = 0;
        }
    }
    return NULL;
}

/* Page-locked memory for the gate's word and the watchdog thread, at init (before any user code, and
 * before the candidate's process takes the list of the harness's own threads). Without the driver's
 * stream memory operations, bursts run ungated and say so. */
static int gate_init(void) {
    if (!cu.streamWaitValue32 || !cu.memHostGetDevicePointer) return 1;
    void *word;
    if (!cu_ok(cu.memAllocHost(&word, 64), "cuMemAllocHost")) return 0;
    G.word = word;
    gate_write(0);
    if (!cu_ok(cu.memHostGetDevicePointer(&G.device, word, 0), "cuMemHostGetDevicePointer")) return 0;
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&G.cond, &attr);
    pthread_condattr_destroy(&attr);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old); /* the thread is born with every signal blocked */
    pthread_t thread;
    int r = pthread_create(&thread, NULL, gate_watchdog, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (r != 0) { PyErr_Format(Fault, "cannot start the call site's gate thread: %s", strerror(r)); return 0; }
    pthread_detach(thread);
    return 1;
}

/* The calling stream waits here until gate_open: the value it waits for. */
static int gate_close(uint32_t *value) {
    *value = ++G.next;
    if (!cu_ok(cu.streamWaitValue32(NULL, G.device, *value, 0 /* CU_STREAM_WAIT_VALUE_GEQ */), "cuStreamWaitValue32"))
        return 0;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    pthread_mutex_lock(&G.lock);
    G.armed = 1;
    G.armed_value = *value;
    G.deadline.tv_sec = now.tv_sec + (now.tv_nsec + GATE_TIMEOUT_MS * 1000000L) / 1000000000L;
    G.deadline.tv_nsec = (now.tv_nsec + GATE_TIMEOUT_MS * 1000000L) % 1000000000L;
    pthread_cond_signal(&G.cond);
    pthread_mutex_unlock(&G.lock);
    return 1;
}

/* Opens the gate (it may be open already); whether the watchdog had opened it first. */
static int gate_open(uint32_t value) {
    pthread_mutex_lock(&G.lock);
    int forced = G.forced_value == value;
    G.armed = 0;
    gate_write(value);
    pthread_cond_signal(&G.cond);
    pthread_mutex_unlock(&G.lock);
    return forced;
}

/* ---- the module's functions ---- */

static PyObject *callsite_init(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"tensor_type", "to_dlpack", "cuda_driver", "flush_bytes", "capture_fd", "input_fd",
                            "timing_fd", "max_output_bytes", "poison_outputs", "every_call_captured", "key_fd", NULL};
    PyObject *tensor_type, *to_dlpack;
    const char *driver = NULL;
    Py_ssize_t flush_bytes;
    int capture_fd, input_fd, timing_fd, poison_outputs = 0, every_call_captured = 0, key_fd = -1;
    unsigned long long max_output;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOzniiiK|ppi", names, &tensor_type, &to_dlpack, &driver, &flush_bytes,
                                     &capture_fd, &input_fd, &timing_fd, &max_output, &poison_outputs, &every_call_captured,
                                     &key_fd))
        return NULL;
    if (S.ready) { PyErr_SetString(Fault, "the call site is initialised once per process"); return NULL; }
    /* The record key: read here, in C, and the descriptor closed, so no Python object ever holds it. */
    if (timing_fd >= 0) {
        if (key_fd < 0) { PyErr_SetString(Fault, "timing records need their key's file descriptor"); return NULL; }
        unsigned char key[16];
        size_t got = 0;
        while (got < sizeof key) {
            ssize_t r = read(key_fd, key + got, sizeof key - got);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) { close(key_fd); PyErr_SetString(Fault, "the record key's descriptor held no key"); return NULL; }
            got += (size_t)r;
        }
        close(key_fd);
        memcpy(record_key, key, sizeof key);
        memset(key, 0, sizeof key);
    }
    if ((capture_fd >= 0 && fstat(capture_fd, &S.capture_id) != 0) || (input_fd >= 0 && fstat(input_fd, &S.input_id) != 0)
        || (timing_fd >= 0 && fstat(timing_fd, &S.timing_id) != 0))
        return PyErr_SetFromErrno(PyExc_OSError);
    if (!PyType_Check(tensor_type) || !PyCallable_Check(to_dlpack)) {
        PyErr_SetString(PyExc_TypeError, "tensor_type must be torch.Tensor and to_dlpack torch._C._to_dlpack");
        return NULL;
    }
    if (driver) {
        void *lib = dlopen(driver, RTLD_NOW | RTLD_LOCAL);
        if (!lib) { PyErr_Format(Fault, "cannot load the CUDA driver %s: %s", driver, dlerror()); return NULL; }
#define LOAD(field, symbol) if (!(*(void **)&cu.field = dlsym(lib, symbol))) { PyErr_Format(Fault, "the CUDA driver lacks %s", symbol); return NULL; }
        LOAD(ctxSynchronize, "cuCtxSynchronize") LOAD(ctxGetCurrent, "cuCtxGetCurrent")
        LOAD(eventCreate, "cuEventCreate") LOAD(eventRecord, "cuEventRecord") LOAD(eventSynchronize, "cuEventSynchronize")
        LOAD(eventElapsedTime, "cuEventElapsedTime") LOAD(memAlloc, "cuMemAlloc_v2")
        LOAD(memsetD8Async, "cuMemsetD8Async") LOAD(memsetD8, "cuMemsetD8_v2") LOAD(memcpyDtoH, "cuMemcpyDtoH_v2")
        LOAD(memcpyHtoD, "cuMemcpyHtoD_v2") LOAD(getErrorString, "cuGetErrorString")
        LOAD(memcpyHtoDAsync, "cuMemcpyHtoDAsync_v2") LOAD(memcpyDtoHAsync, "cuMemcpyDtoHAsync_v2")
        LOAD(memAllocHost, "cuMemAllocHost_v2")
#undef LOAD
        if (!(*(void **)&cu.streamWaitValue32 = dlsym(lib, "cuStreamWaitValue32_v2")))
            *(void **)&cu.streamWaitValue32 = dlsym(lib, "cuStreamWaitValue32");
        *(void **)&cu.memHostGetDevicePointer = dlsym(lib, "cuMemHostGetDevicePointer_v2");
        CUcontext context = NULL;
        if (!cu_ok(cu.ctxGetCurrent(&context), "cuCtxGetCurrent")) return NULL;
        if (!context) { PyErr_SetString(Fault, "no CUDA context is current: initialise torch.cuda first"); return NULL; }
        if (!cu_ok(cu.eventCreate(&S.start, 0), "cuEventCreate") || !cu_ok(cu.eventCreate(&S.returned, 0), "cuEventCreate")
            || !cu_ok(cu.eventCreate(&S.end, 0), "cuEventCreate"))
            return NULL;
        if (flush_bytes > 0 && !cu_ok(cu.memAlloc(&S.flush_device, (size_t)flush_bytes), "cuMemAlloc")) return NULL;
        if (!gate_init()) return NULL;
        S.cuda = 1;
    } else if (flush_bytes > 0) {
        S.flush_host = malloc((size_t)flush_bytes);
        if (!S.flush_host) return PyErr_NoMemory();
    }
    Py_INCREF(tensor_type);
    Py_INCREF(to_dlpack);
    S.tensor_type = tensor_type;
    S.to_dlpack = to_dlpack;
    S.flush_bytes = flush_bytes > 0 ? (size_t)flush_bytes : 0;
    S.capture_fd = capture_fd;
    S.input_fd = input_fd;
    S.timing_fd = timing_fd;
    S.poison_outputs = poison_outputs;
    S.every_call_captured = every_call_captured;
    S.max_output_bytes = max_output;
    S.ready = 1;
    Py_RETURN_NONE;
}

/* call(fn, args, slots, *, capture) -> dict
 * `slots` is a tuple of the harness's empty input tensors (a subset of `args`, in order), filled
 * from the inputs pipe inside the window, or None when the inputs were made in this process. */
static PyObject *callsite_call(PyObject *self, PyObject *pargs, PyObject *kwargs) {
    static char *names[] = {"fn", "args", "slots", "capture", NULL};
    PyObject *fn, *args, *slots;
    int capture = 0;
    if (!PyArg_ParseTupleAndKeywords(pargs, kwargs, "OO!O|p", names, &fn, &PyTuple_Type, &args, &slots, &capture))
        return NULL;
    if (!S.ready) { PyErr_SetString(Fault, "the call site is not initialised"); return NULL; }
    if (slots != Py_None && (!PyTuple_CheckExact(slots) || PyTuple_GET_SIZE(slots) > MAX_SLOTS)) {
        PyErr_SetString(PyExc_TypeError, "slots must be a tuple of tensors or None");
        return NULL;
    }
    if ((capture || slots != Py_None) && S.capture_fd < 0) { PyErr_SetString(Fault, "no capture pipe"); return NULL; }
    /* Set at init, before any user code: in the candidate's process no call is made without its inputs
     * arriving inside the window and its outputs leaving in it. Python code that asks otherwise (a
     * request handler the candidate swapped) is refused, not obeyed. */
    if (S.every_call_captured && (!capture || slots == Py_None)) {
        PyErr_SetString(Tampered, "a call was asked for without its inputs from the pipe or without its capture");
        return NULL;
    }
    Py_ssize_t slot_count = slots == Py_None ? 0 : PyTuple_GET_SIZE(slots);
    Slot slot[MAX_SLOTS];
    uint64_t input_bytes = 0;
    Window window;
    PyObject *result = NULL, *error = NULL, *modified = NULL, *reply = NULL;
    float ms = 0, stream_ms = 0;
    double host_ms = 0;
    int captured = 0;

    S.sequence++;
    close_window(&window);
    if (!poison_previous()) goto fault;
    if ((slot_count || S.every_call_captured)
        && (!read_slots(slots, slot, slot_count, &input_bytes) || !take_inputs(slot, slot_count, input_bytes, S.sequence, NULL, NULL)))
        goto fault;
    if (!flush(S.flush_device, S.flush_bytes)) goto fault;
    if (S.cuda && (!cu_ok(cu.ctxSynchronize(), "cuCtxSynchronize") || !cu_ok(cu.eventRecord(S.start, NULL), "cuEventRecord")))
        goto fault;

    open_window(&window);
    double began = now_ms();
    result = PyObject_Call(fn, args, NULL);
    double returned = now_ms();
    close_window(&window);

    host_ms = returned - began;
    if (!result) error = fetch_error();
    if (S.cuda) {
        if (!cu_ok(cu.eventRecord(S.returned, NULL), "cuEventRecord")) goto fault;
        CUresult r = drain();
        error_after_sync(r, &error);
        if (r == 0) {
            if (!cu_ok(cu.eventRecord(S.end, NULL), "cuEventRecord") || !cu_ok(cu.eventSynchronize(S.end), "cuEventSynchronize")
                || !cu_ok(cu.eventElapsedTime(&ms, S.start, S.end), "cuEventElapsedTime")
                || !cu_ok(cu.eventElapsedTime(&stream_ms, S.start, S.returned), "cuEventElapsedTime"))
                goto fault;
        }
    } else {
        ms = (float)host_ms;
    }

    if (capture) {
        S.out_used = 0;
        if (error ? !emit_note('E', "the call raised") : !emit_value(result, 0)) goto fault;
        if (!send_frame(FRAME_OUTPUTS, S.out, S.out_used)) goto fault;
        captured = !error;
    }
    if (slot_count && !error) {
        modified = modified_slots(slot, slot_count);
        if (!modified) goto fault;
    }
    uint64_t mask = 0;
    for (Py_ssize_t i = 0; modified && i < PyList_GET_SIZE(modified); i++) {
        long index = PyLong_AsLong(PyList_GET_ITEM(modified, i));
        mask |= index < 63 ? (1ull << index) : (1ull << 63);
    }
    if (!write_record((error ? TIMED_RAISED : TIMED_OK) | (captured ? TIMED_CAPTURED : 0), S.sequence, ms,
                      S.cuda ? stream_ms : -1.0, host_ms, mask, 0.0, -1.0))
        goto fault;
    open_window(&window);

    reply = Py_BuildValue("{s:O,s:O,s:d,s:d,s:d,s:i,s:O,s:K}", "result", result ? result : Py_None,
                          "error", error ? error : Py_None, "ms", (double)ms, "stream_ms", S.cuda ? (double)stream_ms : -1.0,
                          "host_ms", host_ms, "captured", captured, "inputs_modified", modified ? modified : Py_None,
                          "sequence", (unsigned long long)S.sequence);
    Py_XDECREF(result);
    Py_XDECREF(error);
    Py_XDECREF(modified);
    return reply;

fault:
    open_window(&window);
    Py_XDECREF(result);
    Py_XDECREF(error);
    Py_XDECREF(modified);
    return NULL;
}

/* ---- bursts: calls back to back, the device synchronized once at the end ---- */

/* Queued behind a burst call: its input slots read back, for the check of which it wrote to. */
static int queue_readback(Slot *slot, Py_ssize_t count, BurstCall *call) {
    uint64_t offset = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        if (slot[i].nbytes && !cu_ok(cu.memcpyDtoHAsync(call->readback + offset, (CUdeviceptr)slot[i].data, slot[i].nbytes, NULL),
                                     "cuMemcpyDtoHAsync"))
            return 0;
        offset += slot[i].nbytes;
    }
    return 1;
}

/* Which slots hold other bytes than `before`: as read back into `after`, or (NULL, on the CPU) in place. */
static uint64_t modified_mask(Slot *slot, Py_ssize_t count, const char *before, const char *after) {
    uint64_t mask = 0, offset = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        const char *now = after ? after + offset : slot[i].data;
        if (slot[i].nbytes && memcmp(before + offset, now, slot[i].nbytes)) mask |= i < 63 ? (1ull << i) : (1ull << 63);
        offset += slot[i].nbytes;
    }
    return mask;
}

/* burst(fn, args, slots, *, capture) -> dict
 *
 * Calls back to back until the reference process answers READY with END, each on its own inputs
 * (uploaded from the pipe behind the previous call, before the cache flush and outside the measured
 * interval), each timed by an event pair on the calling stream, each call's outputs copied off behind
 * it on that stream and poisoned, then one device-wide synchronize. Between the calls the window is
 * closed exactly as in call(): no Python code but the call itself runs from the first READY to the
 * last record. What the device still had to do once the calling stream was done (`leftover`, the
 * host's own wait in the device-wide synchronize) is work the last call left elsewhere: the parent
 * compares it with the baselines'. The last call is the parent's choice and unknown until it has
 * returned, so every call of a burst is equally likely to be the one so checked. */
static PyObject *callsite_burst(PyObject *self, PyObject *pargs, PyObject *kwargs) {
    static char *names[] = {"fn", "args", "slots", "capture", "gate", NULL};
    PyObject *fn, *args, *slots;
    int capture = 0, gate = 1;
    if (!PyArg_ParseTupleAndKeywords(pargs, kwargs, "OO!O!|pp", names, &fn, &PyTuple_Type, &args, &PyTuple_Type, &slots, &capture,
                                     &gate))
        return NULL;
    if (!S.ready) { PyErr_SetString(Fault, "the call site is not initialised"); return NULL; }
    if (S.capture_fd < 0 || S.input_fd < 0) { PyErr_SetString(Fault, "a burst takes its inputs from the pipe"); return NULL; }
    if (PyTuple_GET_SIZE(slots) > MAX_SLOTS) { PyErr_SetString(PyExc_TypeError, "too many input slots"); return NULL; }
    if (S.every_call_captured && !capture) {
        PyErr_SetString(Tampered, "a burst was asked for without its capture");
        return NULL;
    }
    if (S.cuda && !S.burst_events) {
        for (int i = 0; i < MAX_BURST; i++)
            if (!cu_ok(cu.eventCreate(&S.burst[i].start, 0), "cuEventCreate") || !cu_ok(cu.eventCreate(&S.burst[i].end, 0), "cuEventCreate")
                || !cu_ok(cu.eventCreate(&S.burst[i].settled, 0), "cuEventCreate")
                || !cu_ok(cu.eventCreate(&S.burst[i].floor_end, 0), "cuEventCreate")
                || !cu_ok(cu.eventCreate(&S.burst[i].floor_settled, 0), "cuEventCreate"))
                return NULL;
        if (!cu_ok(cu.eventCreate(&S.tail, 0), "cuEventCreate")) return NULL;
        S.burst_flush_bytes = S.flush_bytes > BURST_FLUSH_BYTES ? S.flush_bytes : BURST_FLUSH_BYTES;
        if (!cu_ok(cu.memAlloc(&S.burst_flush, S.burst_flush_bytes), "cuMemAlloc")) return NULL;
        S.burst_events = 1;
    }
    Py_ssize_t slot_count = PyTuple_GET_SIZE(slots);
    Slot slot[MAX_SLOTS];
    uint64_t input_bytes = 0, first_sequence = S.sequence + 1;
    Window window;
    PyObject *error = NULL, *reply = NULL, *results = NULL;
    int n = 0, ended = 0;
    uint32_t gate_value = 0;
    double leftover_ms = 0, idle_ms = 0, span_ms = 0;

    gate = gate && S.cuda && G.word;
    close_window(&window);
    double began = now_ms();
    if (!poison_previous()) goto fault;
    S.out_used = 0;
    pinned_reset();
    if (!read_slots(slots, slot, slot_count, &input_bytes)) goto fault;
    for (;;) {
        BurstCall *call = &S.burst[n];
        /* Page-locked memory is reserved before the gate closes: allocating it may wait for the device. */
        if (S.cuda && (!(call->inputs = pinned_alloc(input_bytes)) || !(call->readback = pinned_alloc(input_bytes))))
            goto fault;
        /* Closed before the inputs' upload: nothing on the device sees a call's inputs before the host
         * has issued the whole call, so no work of the candidate's can start on them early. */
        if (gate && !gate_close(&gate_value)) goto fault;
        if (!take_inputs(slot, slot_count, input_bytes, S.sequence + 1, call, &ended)) goto fault;
        if (ended) break;
        if (n == MAX_BURST) { PyErr_SetString(Tampered, "a burst ran past the longest the harness asks for"); goto fault; }
        S.sequence++;
        call->result = NULL;
        call->captured = 0;
        call->out_length = 0;
        if (!flush(S.burst_flush, S.burst_flush_bytes)) goto fault;
        if (S.cuda && !cu_ok(cu.eventRecord(call->start, NULL), "cuEventRecord")) goto fault;
        open_window(&window);
        double t0 = now_ms();
        call->result = PyObject_Call(fn, args, NULL);
        double t1 = now_ms();
        close_window(&window);
        call->ungated = S.cuda && (!gate || gate_open(gate_value));
        gate_value = 0;
        call->host_ms = t1 - t0;
        n++;
        if (S.cuda && !cu_ok(cu.eventRecord(call->end, NULL), "cuEventRecord")) goto fault;
        if (!call->result) error = fetch_error();
        if (S.cuda) {
            /* The device drained before anything of the harness's is queued behind the call: `settled`,
             * recorded on the idle device, is as late after `end` as the host's wake-up, unless the call
             * left work on another stream or thread (no_hidden_work compares this gap, less the floor
             * below, with the eager reference's). */
            CUresult r = drain();
            error_after_sync(r, &error);
            if (r == 0 && !cu_ok(cu.eventRecord(call->settled, NULL), "cuEventRecord")) goto fault;
            /* The host's own share of that gap, this process's and this moment's: the same drain after a
             * write of the harness's own, long enough that the host is waiting when it ends. The GIL stays
             * held through it: a thread of the candidate's that launched work here would lengthen the
             * floor and so hide as much of its calls' leftover work. */
            if (r == 0 && (!cu_ok(cu.memsetD8Async(S.burst_flush, ++S.flush_value, FLOOR_BYTES, NULL), "cuMemsetD8Async")
                           || !cu_ok(cu.eventRecord(call->floor_end, NULL), "cuEventRecord"))) goto fault;
            if (r == 0) {
                r = cu.ctxSynchronize();
                error_after_sync(r, &error);
                if (r == 0 && !cu_ok(cu.eventRecord(call->floor_settled, NULL), "cuEventRecord")) goto fault;
            }
        }
        if (error) { Py_CLEAR(call->result); break; }
        if (S.cuda && call->readback && !queue_readback(slot, slot_count, call)) goto fault;
        if (!S.cuda) call->modified = modified_mask(slot, slot_count, call->inputs, NULL);
        if (capture) {
            S.call_leaf0 = S.leaf_count;
            call->out_offset = S.out_used;
            S.deferred = S.cuda;
            int ok = emit_value(call->result, 0);
            S.deferred = 0;
            if (!ok) goto fault;
            call->out_length = S.out_used - call->out_offset;
            call->captured = 1;
            if (!poison(S.call_leaf0, 1)) goto fault;
        }
    }
    if (gate_value) gate_open(gate_value); /* the burst's end: the gate closed for a call that never came */
    gate_value = 0;
    if (S.cuda) {
        CUresult r, r2 = 0;
        double t0 = 0, t1 = 0, t2 = 0;
        /* The tail event follows the last call's own queued copies: what the device still has to do
         * once it has passed is nobody's but the candidate's. */
        if (!cu_ok(cu.eventRecord(S.tail, NULL), "cuEventRecord")) goto fault;
        Py_BEGIN_ALLOW_THREADS
        r = n ? cu.eventSynchronize(S.tail) : 0;
        t0 = now_ms();
        /* Released while waiting, as in call(); then once more with the GIL held. */
        if (r == 0) r2 = cu.ctxSynchronize();
        t1 = now_ms();
        Py_END_ALLOW_THREADS
        if (r == 0) r = r2;
        if (r == 0) r = cu.ctxSynchronize();
        t2 = now_ms();
        leftover_ms = t1 - t0;
        idle_ms = t2 - t1;
        error_after_sync(r, &error);
    }
    /* Everything queued has run: gather the captured bytes into their frames and send them. */
    for (int i = 0; i < S.leaf_count; i++) {
        Leaf *leaf = &S.leaves[i];
        if (!leaf->staged || error) continue;
        if (is_contiguous(leaf)) memcpy(S.out + leaf->placed, leaf->staged, leaf->nbytes);
        else gather(leaf, leaf->staged, S.out + leaf->placed);
    }
    uint64_t last_modified = 0;
    for (int i = 0; i < n; i++) {
        BurstCall *call = &S.burst[i];
        uint64_t sequence = first_sequence + (uint64_t)i;
        float ms = 0, settle_ms = 0, floor_ms = 0;
        int raised = call->result == NULL;
        if (S.cuda && !error && (!cu_ok(cu.eventElapsedTime(&ms, call->start, call->end), "cuEventElapsedTime")
                                 || !cu_ok(cu.eventElapsedTime(&settle_ms, call->end, call->settled), "cuEventElapsedTime")
                                 || !cu_ok(cu.eventElapsedTime(&floor_ms, call->floor_end, call->floor_settled),
                                           "cuEventElapsedTime")))
            goto fault;
        double call_ms = S.cuda ? (double)ms : call->host_ms;
        uint64_t mask = S.cuda ? 0 : call->modified;
        if (!raised && S.cuda && call->readback && !error) mask = modified_mask(slot, slot_count, call->inputs, call->readback);
        if (capture && !raised && !error && !send_frame_as(FRAME_OUTPUTS, S.out + call->out_offset, call->out_length, sequence))
            goto fault;
        if (i == n - 1) last_modified = mask;
        uint32_t flags = TIMED_BURST | (raised ? TIMED_RAISED : TIMED_OK) | (call->captured && !error ? TIMED_CAPTURED : 0)
                         | (call->ungated ? TIMED_UNGATED : 0);
        if (!write_record(flags, sequence, call_ms, S.cuda ? call_ms : -1.0, call->host_ms, mask, (double)settle_ms - floor_ms,
                          S.cuda ? (double)floor_ms : -1.0))
            goto fault;
        span_ms += call_ms;
    }
    if (!write_record(TIMED_BURST_END, first_sequence + (uint64_t)(n ? n - 1 : 0), leftover_ms, span_ms, now_ms() - began,
                      last_modified, idle_ms, -1.0))
        goto fault;
    release_leaves();
    open_window(&window);

    results = PyList_New(n);
    if (!results) goto done;
    for (int i = 0; i < n; i++) {
        PyObject *r = S.burst[i].result ? S.burst[i].result : Py_None;
        Py_INCREF(r);
        PyList_SET_ITEM(results, i, r);
    }
    reply = Py_BuildValue("{s:O,s:O,s:i}", "results", results, "error", error ? error : Py_None, "count", n);
    goto done;

fault:
    if (gate_value) gate_open(gate_value);
    open_window(&window);
    release_leaves();
done:
    for (int i = 0; i < n; i++) Py_CLEAR(S.burst[i].result);
    Py_XDECREF(results);
    Py_XDECREF(error);
    return reply;
}

/* Which of the last call's captured outputs hold other bytes now than when they were captured:
 * the output was finished after its call returned. */
static PyObject *callsite_recheck(PyObject *self, PyObject *unused) {
    PyObject *changed = PyList_New(0);
    if (!changed) return NULL;
    for (int i = 0; i < S.leaf_count; i++) {
        Leaf *leaf = &S.leaves[i];
        if (!grow(&S.host, &S.host_size, leaf->nbytes) || !read_leaf(leaf, S.host)) { Py_DECREF(changed); return NULL; }
        if (digest_bytes(S.host, leaf->nbytes) != leaf->digest) {
            PyObject *index = PyLong_FromLong(i);
            if (!index || PyList_Append(changed, index) < 0) { Py_XDECREF(index); Py_DECREF(changed); return NULL; }
            Py_DECREF(index);
        }
    }
    return changed;
}

static PyMethodDef methods[] = {
    {"init", (PyCFunction)(void (*)(void))callsite_init, METH_VARARGS | METH_KEYWORDS, "Set the call site up, before any user code loads."},
    {"call", (PyCFunction)(void (*)(void))callsite_call, METH_VARARGS | METH_KEYWORDS, "Make, time and capture one call."},
    {"burst", (PyCFunction)(void (*)(void))callsite_burst, METH_VARARGS | METH_KEYWORDS, "Calls back to back, each captured, one synchronize."},
    {"recheck", callsite_recheck, METH_NOARGS, "Indices of the last outputs whose bytes changed since their capture."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "kernel_court_callsite", NULL, -1, methods};

PyMODINIT_FUNC PyInit_kernel_court_callsite(void) {
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Fault = PyErr_NewException("kernel_court_callsite.Fault", PyExc_RuntimeError, NULL);
    if (!Fault || PyModule_AddObject(m, "Fault", Fault) < 0) return NULL;
    Py_INCREF(Fault);
    Tampered = PyErr_NewException("kernel_court_callsite.Tampered", Fault, NULL);
    if (!Tampered || PyModule_AddObject(m, "Tampered", Tampered) < 0) return NULL;
    Py_INCREF(Tampered);
    return m;
}
