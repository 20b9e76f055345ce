package kernel

import (
	"context"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

const (
	i32 = api.ValueTypeI32
	i64 = api.ValueTypeI64
)

// Signature is the type of one host function.
type Signature struct {
	Params, Results []api.ValueType
}

type function struct {
	Signature
	fn func(ctx context.Context, stack []uint64)
}

// Signatures lists every kernel function with its type, so a loader can refuse a guest whose
// imports would not link before it instantiates anything.
func Signatures() map[string]Signature {
	out := make(map[string]Signature, len(functions))
	for name, f := range functions {
		out[name] = f.Signature
	}
	return out
}

func sig(params []api.ValueType, results []api.ValueType, fn func(ctx context.Context, stack []uint64)) function {
	return function{Signature{params, results}, fn}
}

var none []api.ValueType

// HTTPRefusal is the message a guest gets when it calls http_request.
const HTTPRefusal = "http_request is not available: plugins reach OpenStack only through " +
	"extism:host/user openstack_request, within their grants"

var functions = map[string]function{
	"alloc": sig([]api.ValueType{i64}, []api.ValueType{i64}, func(ctx context.Context, st []uint64) {
		st[0] = FromContext(ctx, "alloc").Alloc(st[0])
	}),
	"free": sig([]api.ValueType{i64}, none, func(ctx context.Context, st []uint64) {
		FromContext(ctx, "free").Free(st[0])
	}),
	"length": sig([]api.ValueType{i64}, []api.ValueType{i64}, func(ctx context.Context, st []uint64) {
		st[0] = FromContext(ctx, "length").length(st[0])
	}),
	"length_unsafe": sig([]api.ValueType{i64}, []api.ValueType{i64}, func(ctx context.Context, st []uint64) {
		st[0] = FromContext(ctx, "length_unsafe").length(st[0])
	}),
	"load_u8": sig([]api.ValueType{i64}, []api.ValueType{i32}, func(ctx context.Context, st []uint64) {
		st[0] = uint64(FromContext(ctx, "load_u8").span("load_u8", st[0], 1)[0])
	}),
	"load_u64": sig([]api.ValueType{i64}, []api.ValueType{i64}, func(ctx context.Context, st []uint64) {
		st[0] = FromContext(ctx, "load_u64").loadU64(st[0])
	}),
	"store_u8": sig([]api.ValueType{i64, i32}, none, func(ctx context.Context, st []uint64) {
		FromContext(ctx, "store_u8").span("store_u8", st[0], 1)[0] = byte(st[1])
	}),
	"store_u64": sig([]api.ValueType{i64, i64}, none, func(ctx context.Context, st []uint64) {
		FromContext(ctx, "store_u64").storeU64(st[0], st[1])
	}),
	"input_length": sig(none, []api.ValueType{i64}, func(ctx context.Context, st []uint64) {
		st[0] = uint64(len(FromContext(ctx, "input_length").input))
	}),
	"input_load_u8": sig([]api.ValueType{i64}, []api.ValueType{i32}, func(ctx context.Context, st []uint64) {
		st[0] = uint64(FromContext(ctx, "input_load_u8").inputSpan("input_load_u8", st[0], 1)[0])
	}),
	"input_load_u64": sig([]api.ValueType{i64}, []api.ValueType{i64}, func(ctx context.Context, st []uint64) {
		b := FromContext(ctx, "input_load_u64").inputSpan("input_load_u64", st[0], 8)
		st[0] = uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
			uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
	}),
	"output_set": sig([]api.ValueType{i64, i64}, none, func(ctx context.Context, st []uint64) {
		s := FromContext(ctx, "output_set")
		s.output, s.outputSet = s.setOutput("output_set", st[0], st[1]), true
	}),
	"error_set": sig([]api.ValueType{i64}, none, func(ctx context.Context, st []uint64) {
		s := FromContext(ctx, "error_set")
		if st[0] == 0 {
			s.errMsg, s.errSet = nil, false
			return
		}
		b := s.Block("error_set", st[0])
		s.errMsg, s.errSet = s.setOutput("error_set", st[0], uint64(len(b))), true
	}),
	"config_get": sig([]api.ValueType{i64}, []api.ValueType{i64}, func(ctx context.Context, st []uint64) {
		st[0] = FromContext(ctx, "config_get").configGet(st[0])
	}),
	"var_get": sig([]api.ValueType{i64}, []api.ValueType{i64}, func(ctx context.Context, st []uint64) {
		st[0] = FromContext(ctx, "var_get").varGet(st[0])
	}),
	"var_set": sig([]api.ValueType{i64, i64}, none, func(ctx context.Context, st []uint64) {
		FromContext(ctx, "var_set").varSet(st[0], st[1])
	}),
	"log_trace": logFunc("log_trace", LevelTrace),
	"log_debug": logFunc("log_debug", LevelDebug),
	"log_info":  logFunc("log_info", LevelInfo),
	"log_warn":  logFunc("log_warn", LevelWarn),
	"log_error": logFunc("log_error", LevelError),
	"get_log_level": sig(none, []api.ValueType{i32}, func(ctx context.Context, st []uint64) {
		st[0] = uint64(uint32(FromContext(ctx, "get_log_level").logLevel))
	}),
	"http_request": sig([]api.ValueType{i64, i64}, []api.ValueType{i64}, func(ctx context.Context, st []uint64) {
		fault("http_request", HTTPRefusal)
	}),
	"http_status_code": sig(none, []api.ValueType{i32}, func(ctx context.Context, st []uint64) {
		st[0] = 0
	}),
	"http_headers": sig(none, []api.ValueType{i64}, func(ctx context.Context, st []uint64) {
		st[0] = 0
	}),
}

func logFunc(name string, level int32) function {
	return sig([]api.ValueType{i64}, none, func(ctx context.Context, st []uint64) {
		s := FromContext(ctx, name)
		s.logMessage(ctx, level, s.Block(name, st[0]))
	})
}

// Instantiate defines the kernel module in r.
func Instantiate(ctx context.Context, r wazero.Runtime) error {
	b := r.NewHostModuleBuilder(ModuleName)
	for name, f := range functions {
		fn := f.fn
		b.NewFunctionBuilder().
			WithGoFunction(api.GoFunc(func(ctx context.Context, stack []uint64) { fn(ctx, stack) }), f.Params, f.Results).
			WithName(name).
			Export(name)
	}
	_, err := b.Instantiate(ctx)
	return err
}
