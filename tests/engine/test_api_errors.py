"""Errors that leave the Python API: PEP 249 classes, parameters, options,
closed objects, and the conversion of unexpected exceptions (bugs)."""

import engine
from engine import errors as E


# ---------------------------------------------------------------- the classes

PEP_249 = {   # pqdb class -> its PEP 249 class
    "PqdbIOError": "OperationalError", "FileFormatError": "DataError",
    "UnsupportedFeatureError": "NotSupportedError", "AuthenticationError": "OperationalError",
    "SQLError": "ProgrammingError", "BinderError": "ProgrammingError",
    "ConfigError": "ProgrammingError", "ExecutionError": "DatabaseError",
    "MemoryLimitError": "OperationalError", "ArithmeticOverflowError": "DataError",
}


def test_pep249_names_and_module_attributes():
    assert engine.apilevel == "2.0" and engine.threadsafety == 1 and engine.paramstyle == "qmark"
    assert engine.Error is engine.PqdbError and issubclass(engine.Error, Exception)
    assert issubclass(engine.Warning, Exception) and not issubclass(engine.Warning, engine.Error)
    assert issubclass(engine.InterfaceError, engine.Error)
    assert not issubclass(engine.InterfaceError, engine.DatabaseError)
    for name in ("DataError", "OperationalError", "IntegrityError", "InternalError",
                 "ProgrammingError", "NotSupportedError"):
        assert issubclass(getattr(engine, name), engine.DatabaseError), name
        assert getattr(engine, name) is getattr(E, name)
    for ours, pep in PEP_249.items():
        assert issubclass(getattr(engine, ours), getattr(engine, pep)), (ours, pep)
    assert issubclass(engine.MemoryLimitError, engine.ExecutionError)
    assert issubclass(engine.ArithmeticOverflowError, engine.ExecutionError)
    assert issubclass(engine.BinderError, engine.SQLError)
