/* Optional native record reader for the job's Kafka source (spark_jobs/kafka_source.py).

   confluent-kafka builds one Python Message object, and two bytes objects, per record;
   reading them back one by one was the source's main cost (1.7-1.9 us of CPU per
   record, against about 0.5 us here, librdkafka's threads included). This reader drives the same librdkafka, the one bundled in
   the confluent-kafka wheel (or any other librdkafka >= 2.3 the caller names), and fills
   Arrow's buffers directly: offsets and timestamps as little-endian int64, keys and
   values as Arrow binary columns (validity bitmap, int32 offsets, data).

   librdkafka is opened with dlopen at run time, so no headers are needed to build this
   file. The declarations below are librdkafka's public ABI (rdkafka.h), unchanged since
   librdkafka 1.0: rd_kafka_message_t, rd_kafka_topic_partition_t and _list_t.

   Reader(library: str, config: dict[str, str])
   Reader.assign(topic: str, partition: int, offset: int) -> None
   Reader.read(end: int, max_rows: int, timeout_ms: int) -> tuple
       (n, offsets, timestamps, key_validity, key_offsets, key_data, value_validity,
        value_offsets, value_data, done, polled) where `done` is true once the range
       [.., end) is complete (the record at end - 1, a record at or past end, or the
       partition's end), and `polled` is false when no event arrived before the timeout.
   Reader.position(topic: str, partition: int) -> int   (-1 when unknown)
   Reader.unassign() -> None
   Reader.close() -> None
   Errors librdkafka reports (other than the partition's end) raise RuntimeError. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

/* -- librdkafka's ABI ------------------------------------------------------------------ */

typedef struct {
    int err;
    void *rkt;
    int32_t partition;
    void *payload;
    size_t len;
    void *key;
    size_t key_len;
    int64_t offset;
    void *_private;
} rd_message;

typedef struct {
    char *topic;
    int32_t partition;
    int64_t offset;
    void *metadata;
    size_t metadata_size;
    void *opaque;
    int err;
    void *_private;
} rd_partition;

typedef struct {
    int cnt;
    int size;
    rd_partition *elems;
} rd_partition_list;

#define RD_KAFKA_CONSUMER 1
#define RD_KAFKA_CONF_OK 0
#define RD_KAFKA_RESP_ERR__PARTITION_EOF (-191)

static struct {
    void *(*conf_new)(void);
    int (*conf_set)(void *, const char *, const char *, char *, size_t);
    void (*conf_destroy)(void *);
    void *(*new_)(int, void *, char *, size_t);
    void (*destroy)(void *);
    int (*poll_set_consumer)(void *);
    void *(*queue_get_consumer)(void *);
    void (*queue_destroy)(void *);
    ssize_t (*consume_batch_queue)(void *, int, rd_message **, size_t);
    void (*message_destroy)(rd_message *);
    int64_t (*message_timestamp)(const rd_message *, int *);
    rd_partition_list *(*list_new)(int);
    rd_partition *(*list_add)(rd_partition_list *, const char *, int32_t);
    void (*list_destroy)(rd_partition_list *);
    int (*assign)(void *, const rd_partition_list *);
    int (*position)(void *, rd_partition_list *);
    int (*consumer_close)(void *);
    const char *(*err2str)(int);
} rd;

static int rd_loaded = 0;

static int
load_library(const char *path)
{
    if (rd_loaded)
        return 0;
    void *lib = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (lib == NULL) {
        PyErr_Format(PyExc_ImportError, "cannot open librdkafka %s: %s", path, dlerror());
        return -1;
    }
#define BIND(field, symbol)                                                                \
    do {                                                                                   \
        *(void **)(&rd.field) = dlsym(lib, symbol);                                        \
        if (rd.field == NULL) {                                                            \
            PyErr_Format(PyExc_ImportError, "librdkafka %s has no %s", path, symbol);      \
            return -1;                                                                     \
        }                                                                                  \
    } while (0)
    BIND(conf_new, "rd_kafka_conf_new");
    BIND(conf_set, "rd_kafka_conf_set");
    BIND(conf_destroy, "rd_kafka_conf_destroy");
    BIND(new_, "rd_kafka_new");
    BIND(destroy, "rd_kafka_destroy");
    BIND(poll_set_consumer, "rd_kafka_poll_set_consumer");
    BIND(queue_get_consumer, "rd_kafka_queue_get_consumer");
    BIND(queue_destroy, "rd_kafka_queue_destroy");
    BIND(consume_batch_queue, "rd_kafka_consume_batch_queue");
    BIND(message_destroy, "rd_kafka_message_destroy");
    BIND(message_timestamp, "rd_kafka_message_timestamp");
    BIND(list_new, "rd_kafka_topic_partition_list_new");
    BIND(list_add, "rd_kafka_topic_partition_list_add");
    BIND(list_destroy, "rd_kafka_topic_partition_list_destroy");
    BIND(assign, "rd_kafka_assign");
    BIND(position, "rd_kafka_position");
    BIND(consumer_close, "rd_kafka_consumer_close");
    BIND(err2str, "rd_kafka_err2str");
#undef BIND
    rd_loaded = 1;
    return 0;
}

/* -- growable buffers -------------------------------------------------------------------- */

typedef struct {
    char *data;
    size_t len, cap;
} Buffer;

static int
reserve(Buffer *b, size_t more)
{
    if (b->len + more <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + more)
        cap *= 2;
    char *data = PyMem_Realloc(b->data, cap);
    if (data == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    b->data = data;
    b->cap = cap;
    return 0;
}

static inline int
append(Buffer *b, const void *src, size_t n)
{
    if (reserve(b, n) < 0)
        return -1;
    if (n)
        memcpy(b->data + b->len, src, n);
    b->len += n;
    return 0;
}

static PyObject *
take(Buffer *b)
{
    PyObject *out = PyBytes_FromStringAndSize(b->data ? b->data : "", (Py_ssize_t)b->len);
    b->len = 0;
    return out;
}

/* One Arrow binary column: validity bitmap, int32 offsets (n + 1), data. */
typedef struct {
    Buffer validity, offsets, data;
} Binary;

static int
binary_start(Binary *c)
{
    c->validity.len = c->offsets.len = c->data.len = 0;
    int32_t zero = 0;
    return append(&c->offsets, &zero, sizeof zero);
}

static int
binary_add(Binary *c, Py_ssize_t row, const void *bytes, size_t len)
{
    size_t byte = (size_t)row / 8;
    if (byte >= c->validity.len) { /* rows arrive in order: at most one new byte */
        if (reserve(&c->validity, byte + 1 - c->validity.len) < 0)
            return -1;
        c->validity.data[byte] = 0;
        c->validity.len = byte + 1;
    }
    if (bytes != NULL) {
        if (c->data.len + len > INT32_MAX) {
            PyErr_SetString(PyExc_OverflowError, "more than 2 GiB of keys or values in one read");
            return -1;
        }
        c->validity.data[byte] |= (char)(1 << (row % 8));
        if (append(&c->data, bytes, len) < 0)
            return -1;
    }
    int32_t end = (int32_t)c->data.len;
    return append(&c->offsets, &end, sizeof end);
}

static void
binary_free(Binary *c)
{
    PyMem_Free(c->validity.data);
    PyMem_Free(c->offsets.data);
    PyMem_Free(c->data.data);
}

/* -- Reader ----------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD void *rk;
    void *queue;
    rd_message **messages;
    size_t capacity;
    Buffer offsets, stamps;
    Binary keys, values;
} Reader;

static void
reader_close_handle(Reader *self)
{
    if (self->rk == NULL)
        return;
    void *rk = self->rk, *queue = self->queue;
    self->rk = self->queue = NULL;
    Py_BEGIN_ALLOW_THREADS;
    rd.queue_destroy(queue);
    rd.consumer_close(rk);
    rd.destroy(rk);
    Py_END_ALLOW_THREADS;
}

static void
reader_dealloc(Reader *self)
{
    reader_close_handle(self);
    PyMem_Free(self->messages);
    PyMem_Free(self->offsets.data);
    PyMem_Free(self->stamps.data);
    binary_free(&self->keys);
    binary_free(&self->values);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int
reader_init(Reader *self, PyObject *args, PyObject *kwds)
{
    const char *library;
    PyObject *config;
    static char *names[] = {"library", "config", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "sO!", names, &library, &PyDict_Type, &config))
        return -1;
    if (self->rk != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Reader is already initialised");
        return -1;
    }
    if (load_library(library) < 0)
        return -1;
    char errstr[512];
    void *conf = rd.conf_new();
    PyObject *name, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(config, &pos, &name, &value)) {
        const char *n = PyUnicode_AsUTF8(name), *v = PyUnicode_AsUTF8(value);
        if (n == NULL || v == NULL) {
            rd.conf_destroy(conf);
            return -1;
        }
        if (rd.conf_set(conf, n, v, errstr, sizeof errstr) != RD_KAFKA_CONF_OK) {
            rd.conf_destroy(conf);
            PyErr_Format(PyExc_ValueError, "librdkafka property %s=%s: %s", n, v, errstr);
            return -1;
        }
    }
    void *rk = rd.new_(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr); /* owns conf */
    if (rk == NULL) {
        rd.conf_destroy(conf);
        PyErr_Format(PyExc_RuntimeError, "cannot create a Kafka consumer: %s", errstr);
        return -1;
    }
    rd.poll_set_consumer(rk);
    self->rk = rk;
    self->queue = rd.queue_get_consumer(rk);
    return 0;
}

static int
check_open(Reader *self)
{
    if (self->rk == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Reader is closed");
        return -1;
    }
    return 0;
}

static PyObject *
reader_assign(Reader *self, PyObject *args)
{
    const char *topic;
    int partition;
    long long offset;
    if (!PyArg_ParseTuple(args, "siL", &topic, &partition, &offset) || check_open(self) < 0)
        return NULL;
    rd_partition_list *list = rd.list_new(1);
    rd.list_add(list, topic, partition)->offset = (int64_t)offset;
    int err = rd.assign(self->rk, list);
    rd.list_destroy(list);
    if (err)
        return PyErr_Format(PyExc_RuntimeError, "assign %s-%d: %s", topic, partition,
                            rd.err2str(err));
    Py_RETURN_NONE;
}

static PyObject *
reader_unassign(Reader *self, PyObject *Py_UNUSED(ignored))
{
    if (check_open(self) < 0)
        return NULL;
    int err = rd.assign(self->rk, NULL);
    if (err)
        return PyErr_Format(PyExc_RuntimeError, "unassign: %s", rd.err2str(err));
    Py_RETURN_NONE;
}

static PyObject *
reader_position(Reader *self, PyObject *args)
{
    const char *topic;
    int partition;
    if (!PyArg_ParseTuple(args, "si", &topic, &partition))
        return NULL;
    if (check_open(self) < 0)
        return NULL;
    rd_partition_list *list = rd.list_new(1);
    rd.list_add(list, topic, partition);
    int err = rd.position(self->rk, list);
    int64_t offset = list->elems[0].offset;
    rd.list_destroy(list);
    if (err) {
        PyErr_Format(PyExc_RuntimeError, "position %s-%d: %s", topic, partition, rd.err2str(err));
        return NULL;
    }
    return PyLong_FromLongLong(offset >= 0 ? offset : -1);
}

/* One message into the columns; 1 when the range is complete, -1 on a Python error. */
static int
add_message(Reader *self, const rd_message *m, Py_ssize_t row, int64_t end)
{
    int tstype;
    int64_t offset = m->offset, stamp = rd.message_timestamp(m, &tstype);
    if (append(&self->offsets, &offset, sizeof offset) < 0 ||
        append(&self->stamps, &stamp, sizeof stamp) < 0 ||
        binary_add(&self->keys, row, m->key, m->key_len) < 0 ||
        binary_add(&self->values, row, m->payload, m->len) < 0)
        return -1;
    return offset == end - 1;
}

static PyObject *
reader_read(Reader *self, PyObject *args)
{
    long long end;
    Py_ssize_t max_rows;
    int timeout_ms;
    if (!PyArg_ParseTuple(args, "Lni", &end, &max_rows, &timeout_ms))
        return NULL;
    if (check_open(self) < 0)
        return NULL;
    if (max_rows < 1) {
        PyErr_SetString(PyExc_ValueError, "max_rows must be at least 1");
        return NULL;
    }
    if ((size_t)max_rows > self->capacity) {
        rd_message **grown = PyMem_Realloc(self->messages, (size_t)max_rows * sizeof *grown);
        if (grown == NULL)
            return PyErr_NoMemory();
        self->messages = grown;
        self->capacity = (size_t)max_rows;
    }
    self->offsets.len = self->stamps.len = 0;
    if (binary_start(&self->keys) < 0 || binary_start(&self->values) < 0)
        return NULL;

    ssize_t got;
    Py_BEGIN_ALLOW_THREADS;
    got = rd.consume_batch_queue(self->queue, timeout_ms, self->messages, (size_t)max_rows);
    Py_END_ALLOW_THREADS;
    if (got < 0) {
        PyErr_SetString(PyExc_RuntimeError, "rd_kafka_consume_batch_queue failed");
        return NULL;
    }
    Py_ssize_t rows = 0;
    int done = 0, failed = 0;
    char error[512] = "";
    for (ssize_t i = 0; i < got; i++) {
        rd_message *m = self->messages[i];
        if (!done && !failed) {
            if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
                done = 1;
            } else if (m->err) {
                snprintf(error, sizeof error, "%s%s%.*s", rd.err2str(m->err),
                         m->payload ? ": " : "", m->payload ? (int)m->len : 0,
                         m->payload ? (const char *)m->payload : "");
                failed = 1;
            } else if (m->offset >= end) {
                done = 1;
            } else {
                int last = add_message(self, m, rows++, (int64_t)end);
                if (last < 0)
                    failed = 2;
                else if (last)
                    done = 1;
            }
        }
        rd.message_destroy(m);
    }
    if (failed == 2)
        return NULL;
    if (failed) {
        PyErr_SetString(PyExc_RuntimeError, error);
        return NULL;
    }
    return Py_BuildValue("(nNNNNNNNNOO)", rows, take(&self->offsets), take(&self->stamps),
                         take(&self->keys.validity), take(&self->keys.offsets),
                         take(&self->keys.data), take(&self->values.validity),
                         take(&self->values.offsets), take(&self->values.data),
                         done ? Py_True : Py_False, got > 0 ? Py_True : Py_False);
}

static PyObject *
reader_close(Reader *self, PyObject *Py_UNUSED(ignored))
{
    reader_close_handle(self);
    Py_RETURN_NONE;
}

static PyMethodDef reader_methods[] = {
    {"assign", (PyCFunction)reader_assign, METH_VARARGS, "Read topic-partition from offset."},
    {"unassign", (PyCFunction)reader_unassign, METH_NOARGS, "Stop reading (and fetching)."},
    {"read", (PyCFunction)reader_read, METH_VARARGS, "Up to max_rows records before end."},
    {"position", (PyCFunction)reader_position, METH_VARARGS, "The next offset to read."},
    {"close", (PyCFunction)reader_close, METH_NOARGS, "Close the consumer."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ReaderType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "spark_jobs._kafka_read.Reader",
    .tp_basicsize = sizeof(Reader),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A librdkafka consumer that reads ranges straight into Arrow buffers.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)reader_init,
    .tp_dealloc = (destructor)reader_dealloc,
    .tp_methods = reader_methods,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_kafka_read", "Native Kafka range reader.", -1, NULL,
};

PyMODINIT_FUNC
PyInit__kafka_read(void)
{
    if (PyType_Ready(&ReaderType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    Py_INCREF(&ReaderType);
    if (PyModule_AddObject(m, "Reader", (PyObject *)&ReaderType) < 0) {
        Py_DECREF(&ReaderType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
