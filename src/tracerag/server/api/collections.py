"""TODO(helper): see /work/notes/i13."""

from fastapi import APIRouter

router = APIRouter()
