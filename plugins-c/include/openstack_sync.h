/*
 * openstack_sync.h: the openstack-sync plugin ABI v1 for C (docs/abi.md).
 *
 * The Extism kernel functions (extism:host/env) and the openstack-sync host function
 * (extism:host/user openstack_request) with the exact types the host checks at load, plus a few
 * helpers that move bytes between the guest's memory and the host's kernel memory.
 *
 * Build a plugin as a WASI reactor (clang, lld, wasi-libc):
 *   clang --target=wasm32-wasi --sysroot=/usr -mexec-model=reactor -O2 -Iinclude -o p.wasm p.c
 * and declare the ABI marker once: OPENSTACK_SYNC_ABI_V1.
 *
 * Offsets and lengths in kernel memory are 64-bit (ExtismPointer); guest pointers are 32-bit.
 */
#ifndef OPENSTACK_SYNC_H
#define OPENSTACK_SYNC_H

#include <stddef.h>
#include <stdint.h>

typedef uint64_t ExtismPointer;

#define OS_KERNEL(name) __attribute__((import_module("extism:host/env"), import_name(#name)))
#define OS_USER(name) __attribute__((import_module("extism:host/user"), import_name(#name)))
/* OS_EXPORT(name) exports a function under name: every entry point is int32_t name(void). */
#define OS_EXPORT(name) __attribute__((export_name(#name)))

/* The ABI marker: the host loads only a module that exports openstack_sync_abi_v1. */
#define OPENSTACK_SYNC_ABI_V1 \
	OS_EXPORT(openstack_sync_abi_v1) void openstack_sync_abi_v1(void) {}

/* Kernel functions (docs/abi.md section 1, "Kernel functions"). */
OS_KERNEL(alloc) ExtismPointer extism_alloc(uint64_t length);
OS_KERNEL(free) void extism_free(ExtismPointer offset);
OS_KERNEL(length) uint64_t extism_length(ExtismPointer offset);
OS_KERNEL(length_unsafe) uint64_t extism_length_unsafe(ExtismPointer offset);
OS_KERNEL(load_u8) uint8_t extism_load_u8(ExtismPointer offset);
OS_KERNEL(load_u64) uint64_t extism_load_u64(ExtismPointer offset);
OS_KERNEL(store_u8) void extism_store_u8(ExtismPointer offset, uint8_t value);
OS_KERNEL(store_u64) void extism_store_u64(ExtismPointer offset, uint64_t value);
OS_KERNEL(input_length) uint64_t extism_input_length(void);
OS_KERNEL(input_load_u8) uint8_t extism_input_load_u8(uint64_t index);
OS_KERNEL(input_load_u64) uint64_t extism_input_load_u64(uint64_t index);
OS_KERNEL(output_set) void extism_output_set(ExtismPointer offset, uint64_t length);
OS_KERNEL(error_set) void extism_error_set(ExtismPointer offset);
OS_KERNEL(config_get) ExtismPointer extism_config_get(ExtismPointer key);
OS_KERNEL(var_get) ExtismPointer extism_var_get(ExtismPointer key);
OS_KERNEL(var_set) void extism_var_set(ExtismPointer key, ExtismPointer value);
OS_KERNEL(log_trace) void extism_log_trace(ExtismPointer message);
OS_KERNEL(log_debug) void extism_log_debug(ExtismPointer message);
OS_KERNEL(log_info) void extism_log_info(ExtismPointer message);
OS_KERNEL(log_warn) void extism_log_warn(ExtismPointer message);
OS_KERNEL(log_error) void extism_log_error(ExtismPointer message);
OS_KERNEL(get_log_level) int32_t extism_get_log_level(void);
/* http_request always fails the call: reach OpenStack through openstack_request only. */
OS_KERNEL(http_request) ExtismPointer extism_http_request(ExtismPointer request, ExtismPointer body);
OS_KERNEL(http_status_code) int32_t extism_http_status_code(void);
OS_KERNEL(http_headers) ExtismPointer extism_http_headers(void);

/*
 * openstack_request takes a block holding a request message and returns a block holding either
 * a JSON head, '\n' and the body as OpenStack sent it, or (no response at all) a JSON object
 * {"error": {...}} without a newline (docs/abi.md section 3).
 */
OS_USER(openstack_request) ExtismPointer openstack_request(ExtismPointer request);

/*
 * source_request is openstack_request for a source outside OpenStack the plugin declares in its
 * metadata "sources" and the operator allow-lists (docs/abi.md section 8): the request names the
 * source, the base URL the CR names and the Secret key of the credential, which the host reads
 * and sends; the answer has the same framing, with the credential scrubbed out.
 */
OS_USER(source_request) ExtismPointer source_request(ExtismPointer request);

/*
 * Bulk copies (docs/abi.md, "Bulk copies"): a whole message per host call, where the Extism
 * functions above move 8 bytes per call. input_read copies the call's input from offset into
 * dst, at most n bytes; block_read copies a kernel block; both return the bytes copied.
 * block_write returns a new kernel block holding n bytes of src (0 when it does not fit).
 */
OS_USER(input_read) uint32_t os_input_read(uint64_t offset, void *dst, uint32_t n);
OS_USER(block_read) uint32_t os_block_read(ExtismPointer block, void *dst, uint32_t n);
OS_USER(block_write) ExtismPointer os_block_write(const void *src, uint32_t n);

/*
 * The convergence memo (docs/abi.md): parts holds n pairs of (pointer, length), the evidence the
 * reconcile's verdict rests on; 1 means the host recorded this input with this evidence, and the
 * reconcile may answer {"unchanged": true}.
 */
OS_USER(unchanged) uint32_t os_unchanged(const uint32_t *parts, uint32_t n);

/* Helpers. All are static so a plugin links only what it uses. */

/* os_store copies n bytes of guest memory into a new kernel block; 0 when the host refuses. */
static inline ExtismPointer os_store(const void *data, size_t n) {
	ExtismPointer off = extism_alloc(n);
	const uint8_t *p = (const uint8_t *)data;
	if (off == 0 && n > 0) {
		return 0;
	}
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t w;
		__builtin_memcpy(&w, p + i, 8);
		extism_store_u64(off + i, w);
	}
	for (; i < n; i++) {
		extism_store_u8(off + i, p[i]);
	}
	return off;
}

/* os_load copies min(n, the block's length) bytes of a kernel block into dst and returns that
 * count. */
static inline size_t os_load(ExtismPointer off, void *dst, size_t n) {
	uint64_t len = extism_length(off);
	uint8_t *p = (uint8_t *)dst;
	if (len < n) {
		n = (size_t)len;
	}
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t w = extism_load_u64(off + i);
		__builtin_memcpy(p + i, &w, 8);
	}
	for (; i < n; i++) {
		p[i] = extism_load_u8(off + i);
	}
	return n;
}

/* os_input copies up to n bytes of the call's input into dst and returns the input's length
 * (which may exceed n). */
static inline uint64_t os_input(void *dst, size_t n) {
	uint64_t len = extism_input_length();
	uint8_t *p = (uint8_t *)dst;
	for (uint64_t i = 0; i < len && i < n; i++) {
		p[i] = extism_input_load_u8(i);
	}
	return len;
}

static inline size_t os_strlen(const char *s) {
	size_t n = 0;
	while (s[n]) {
		n++;
	}
	return n;
}

/* os_output sets the call's output to a NUL-terminated string. */
static inline void os_output(const char *s) {
	size_t n = os_strlen(s);
	extism_output_set(os_store(s, n), n);
}

/* os_error sets the call's error to a NUL-terminated string: a JSON error message
 * ({"message": ..., "permanent": ...}) or plain text. */
static inline void os_error(const char *s) { extism_error_set(os_store(s, os_strlen(s))); }

/* os_log_info logs a NUL-terminated string at info level. */
static inline void os_log_info(const char *s) { extism_log_info(os_store(s, os_strlen(s))); }

/* os_config copies the value of the hook's <PREFIX>_<key> into dst (NUL-terminated, cut to
 * n-1 bytes) and returns 1, or returns 0 when it is unset. */
static inline int os_config(const char *key, char *dst, size_t n) {
	ExtismPointer v = extism_config_get(os_store(key, os_strlen(key)));
	if (v == 0 || n == 0) {
		return 0;
	}
	size_t got = os_load(v, dst, n - 1);
	dst[got] = 0;
	return 1;
}

/* os_abi_v1 reports whether the call's input is a message of ABI major version 1: the host
 * writes abi_version first, so a prefix check is enough (docs/abi.md section 2). */
static inline int os_abi_v1(void) {
	static const char want[] = "{\"abi_version\":1";
	char got[sizeof want - 1];
	if (os_input(got, sizeof got) < sizeof got) {
		return 0;
	}
	for (size_t i = 0; i < sizeof got; i++) {
		if (got[i] != want[i]) {
			return 0;
		}
	}
	/* 1 must be the whole number: {"abi_version":12 is another version. */
	char next[sizeof want] = {0};
	os_input(next, sizeof next);
	return next[sizeof want - 1] == ',' || next[sizeof want - 1] == '}';
}

#endif
