from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Optional as _Optional

DESCRIPTOR: _descriptor.FileDescriptor

class StoreCall(_message.Message):
    __slots__ = ("op", "args_json")
    OP_FIELD_NUMBER: _ClassVar[int]
    ARGS_JSON_FIELD_NUMBER: _ClassVar[int]
    op: str
    args_json: str
    def __init__(self, op: _Optional[str] = ..., args_json: _Optional[str] = ...) -> None: ...

class StoreResult(_message.Message):
    __slots__ = ("result_json",)
    RESULT_JSON_FIELD_NUMBER: _ClassVar[int]
    result_json: str
    def __init__(self, result_json: _Optional[str] = ...) -> None: ...

class StoreError(_message.Message):
    __slots__ = ("category", "message", "retryable", "kind")
    CATEGORY_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    RETRYABLE_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    category: str
    message: str
    retryable: bool
    kind: str
    def __init__(self, category: _Optional[str] = ..., message: _Optional[str] = ..., retryable: _Optional[bool] = ..., kind: _Optional[str] = ...) -> None: ...
